"""Keras 3 with tracker: one line, ``model.fit(..., callbacks=[TrackerCallback(...)])``.

A small classifier on synthetic data, on the torch backend unless
KERAS_BACKEND says otherwise; batch metrics every 5 batches, epoch metrics
with validation, the optimizer and parameter count in the config.

Usage::

    python examples/keras_example.py
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

os.environ.setdefault("KERAS_BACKEND", "torch")
if importlib.util.find_spec("keras") is None or importlib.util.find_spec(os.environ["KERAS_BACKEND"]) is None:
    print('examples/keras_example.py needs Keras 3 and a backend: pip install torch==2.13.0 "tracker-core[keras]"')
    sys.exit(0)

import keras  # noqa: E402
import numpy as np  # noqa: E402

from tracker.integrations.keras import TrackerCallback  # noqa: E402


def main() -> None:
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(600, 10)).astype("float32")
    y = (x[:, :3].sum(1) > 0).astype("float32")
    model = keras.Sequential([keras.Input((10,)), keras.layers.Dense(16, activation="relu"),
                              keras.layers.Dense(1, activation="sigmoid")])
    model.compile(optimizer=keras.optimizers.Adam(3e-3), loss="binary_crossentropy", metrics=["accuracy"])
    callback = TrackerCallback(project="examples", name="keras-classifier", tags=["example", "keras"], log_every=5)
    model.fit(x, y, batch_size=32, epochs=4, validation_split=0.2, callbacks=[callback], verbose=0)
    subprocess.run([sys.executable, "-m", "tracker", "show", callback.run.id], check=True)


if __name__ == "__main__":
    main()
