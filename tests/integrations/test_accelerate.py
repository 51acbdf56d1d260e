"""TrackerTracker with a real Accelerator on CPU and a tiny model built here."""

from __future__ import annotations

from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
accelerate = pytest.importorskip("accelerate")

import tracker  # noqa: E402
from tracker.integrations.accelerate import TrackerTracker  # noqa: E402


def test_accelerator_logs_config_steps_and_values_into_one_run(tmp_store: Path) -> None:
    ours = TrackerTracker(project="acc", name="tiny", config={"dataset": "random"})
    accelerator = accelerate.Accelerator(cpu=True, log_with=ours)
    accelerator.init_trackers("ignored-by-custom-trackers", config={"lr": 0.01, "epochs": 2})
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(16, 4), torch.randn(16, 1)),
                                       batch_size=4)
    model, opt, data = accelerator.prepare(model, opt, data)
    losses = []
    step = 0
    for _epoch in range(2):
        for x, y in data:
            loss = torch.nn.functional.mse_loss(model(x), y)
            accelerator.backward(loss)
            opt.step()
            opt.zero_grad()
            accelerator.log({"train/loss": loss.detach(), "note": "text is left out"}, step=step)
            losses.append(loss.item())
            step += 1
    assert accelerator.get_tracker("tracker", unwrap=True) is ours.run
    accelerator.end_training()

    [run] = tracker.open_store().runs()
    assert (run.project, run.name, run.status) == ("acc", "tiny", "finished")
    assert run.config == {"lr": 0.01, "epochs": 2, "dataset": "random"}
    m = tracker.open_store().run(run.id).metrics()
    assert m["step"].tolist() == list(range(8))
    assert m["train/loss"].tolist() == pytest.approx(losses, rel=1e-6)
    assert "note" not in m
