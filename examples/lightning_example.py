"""PyTorch Lightning with tracker: one line, ``Trainer(logger=TrackerLogger(...))``.

A tiny regression model on synthetic data, two epochs on the CPU; the
hyperparameters saved by the module become the run's config, and the CLI
prints the run at the end.

Usage::

    python examples/lightning_example.py
"""

from __future__ import annotations

import subprocess
import sys

try:
    import lightning.pytorch as pl
    import torch
except ImportError:
    print('examples/lightning_example.py needs Lightning: pip install torch==2.13.0 "tracker-core[lightning]"')
    sys.exit(0)

from tracker.integrations.lightning import TrackerLogger


class Regression(pl.LightningModule):
    """A two-layer network fitting y = sum(x) + noise."""

    def __init__(self, lr: float = 0.05, hidden: int = 16) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.net = torch.nn.Sequential(torch.nn.Linear(8, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1))

    def training_step(self, batch: tuple, batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.net(x), y)
        self.log("train/loss", loss)
        return loss

    def validation_step(self, batch: tuple, batch_idx: int) -> None:
        x, y = batch
        self.log("val/loss", torch.nn.functional.mse_loss(self.net(x), y))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


def data(n: int, seed: int) -> torch.utils.data.DataLoader:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=g)
    y = x.sum(1, keepdim=True) + 0.1 * torch.randn(n, 1, generator=g)
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=16)


def main() -> None:
    torch.set_num_threads(1)
    logger = TrackerLogger(project="examples", name="lightning-regression", tags=["example", "lightning"])
    trainer = pl.Trainer(max_epochs=2, logger=logger, log_every_n_steps=4, accelerator="cpu", devices=1,
                         enable_progress_bar=False, enable_model_summary=False, enable_checkpointing=False)
    trainer.fit(Regression(), data(256, 0), data(64, 1))
    subprocess.run([sys.executable, "-m", "tracker", "show", logger.version], check=True)


if __name__ == "__main__":
    main()
