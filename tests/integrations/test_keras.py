"""TrackerCallback with a real Keras 3 fit on the torch backend (in a fresh interpreter: the backend is
chosen when keras is first imported)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
if importlib.util.find_spec("keras") is None:  # not imported here: the backend is chosen on first import
    pytest.skip("keras is not installed (pip install \"tracker-core[keras]\")", allow_module_level=True)

import tracker  # noqa: E402

from .conftest import run_script  # noqa: E402

SCRIPT = """
    import json, os
    os.environ["KERAS_BACKEND"] = "torch"
    import numpy as np
    import keras
    import torch
    from tracker.integrations.keras import TrackerCallback

    torch.set_num_threads(1)
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 4)).astype("float32")
    y = (x.sum(1) > 0).astype("float32")

    def model(*extra):
        m = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="relu"), *extra,
                              keras.layers.Dense(1, activation="sigmoid")])
        m.compile(optimizer=keras.optimizers.Adam(0.01), loss="binary_crossentropy", metrics=["accuracy"])
        return m

    out = {}
    ok = model()
    cb = TrackerCallback(project="keras", name="ok", log_every=3)
    # 32 training samples in batches of 8: 4 batches per epoch.
    h1 = ok.fit(x, y, batch_size=8, epochs=3, validation_split=0.2, callbacks=[cb], verbose=0)
    h2 = ok.fit(x, y, batch_size=8, epochs=1, validation_split=0.2, callbacks=[cb], verbose=0)
    out["ok"] = {"id": cb.run.id, "history": h1.history, "again": h2.history,
                 "params": ok.count_params()}

    class Explode(keras.layers.Layer):
        calls = 0
        def call(self, inputs, training=None):
            if training:
                Explode.calls += 1
                if Explode.calls == 3:
                    raise FloatingPointError("loss is NaN")
            return inputs

    bad = TrackerCallback(project="keras", name="bad")
    try:
        model(Explode()).fit(x, y, batch_size=8, epochs=2, callbacks=[bad], verbose=0)
    except FloatingPointError:
        out["bad"] = bad.run.id
    try:
        TrackerCallback(log_every=-1)
    except ValueError as exc:
        out["refused"] = str(exc)
    print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def fitted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    work = tmp_path_factory.mktemp("keras")
    store = work / "store"
    proc = run_script(SCRIPT, work, env={"TRACKER_STORE": str(store), "KERAS_BACKEND": "torch"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT "))
    return store, json.loads(line[len("RESULT "):])


def test_fit_logs_config_batches_and_epochs(fitted: tuple[Path, dict]) -> None:
    store, out = fitted
    view = tracker.open_store(store).run(out["ok"]["id"])
    info = view.info
    assert info.status == "finished" and (info.project, info.name) == ("keras", "ok")
    config = info.config
    assert config["optimizer"] == "Adam" and config["learning_rate"] == pytest.approx(0.01)
    assert config["epochs"] == 3 and config["steps_per_epoch"] == 4
    assert config["num_parameters"] == out["ok"]["params"] == 4 * 3 + 3 + 3 + 1

    m = view.metrics()
    epochs = ~_nan(m["epoch"])
    # The first fit: epochs 0, 1, 2 at global batches 4, 8, 12; the second fit continues at 16.
    assert m["step"][epochs].tolist() == [4, 8, 12, 16] and m["epoch"][epochs].tolist() == [0, 1, 2, 0]
    history = out["ok"]["history"]
    for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
        logged = m[key][epochs].tolist()
        assert logged[:3] == pytest.approx(history[key], rel=1e-6), key
        assert logged[3] == pytest.approx(out["ok"]["again"][key][0], rel=1e-6), key
    # Batch metrics every 3 global batches.
    batches = ~_nan(m["batch/loss"])
    assert m["step"][batches].tolist() == [3, 6, 9, 12, 15]
    # An epoch's last batch logs the epoch's running values: batch 12 is the end of epoch 2.
    at12 = m["step"] == 12
    assert m["batch/loss"][at12 & batches][0] == pytest.approx(history["loss"][2], rel=1e-6)
    assert view.info.writers == 2  # the second fit appended to the run


def test_failing_fit_marks_the_run_failed(fitted: tuple[Path, dict]) -> None:
    store, out = fitted
    info = tracker.open_store(store).run(out["bad"]).info
    assert info.status == "failed"
    assert info.error["type"] == "FloatingPointError" and "loss is NaN" in info.error["message"]
    assert info.last_step == 2  # two batches logged before the third raised
    assert "log_every" in out["refused"]


def _nan(a):  # noqa: ANN001, ANN202 - a numpy array
    import numpy as np

    return np.isnan(a)
