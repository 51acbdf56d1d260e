"""Artifacts, images and histograms (and system metrics) from a small numpy training loop.

A tiny two-layer network learns to tell two noisy rings apart. Every 25
steps it logs a histogram of its hidden weights and, with Pillow installed,
an image of its decision surface; at the end it stores its weights and a
folder of predictions as artifacts (the same content is stored once per
store), then the CLI lists them and copies one back out with every hash
checked. System metrics (CPU, memory; GPUs through NVML) are sampled every
tenth of a second while it runs when psutil is installed (the default is
every 10 s).

Without the optional extras it runs all the same and says what it skipped:
``pip install "tracker-core[media]"`` for images, ``"tracker-core[system]"``
for system metrics.

Usage::

    python examples/capture.py [--steps 200]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import tracker


def rings(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Two noisy concentric rings: points and labels."""
    y = rng.integers(0, 2, n)
    angle = rng.uniform(0, 2 * np.pi, n)
    radius = 1.0 + y + 0.25 * rng.normal(size=n)
    return np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1), y.astype(np.float64)


def surface(w1: np.ndarray, b1: np.ndarray, w2: np.ndarray, size: int = 64) -> np.ndarray:
    """The network's output over [-3, 3]^2 as an HxWx3 float image in [0, 1]."""
    g = np.linspace(-3, 3, size)
    xx, yy = np.meshgrid(g, g)
    p = forward(np.stack([xx.ravel(), yy.ravel()], axis=1), w1, b1, w2)[1].reshape(size, size)
    return np.stack([p, 0.3 * np.ones_like(p), 1.0 - p], axis=2)


def forward(x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    h = np.tanh(x @ w1 + b1)
    return h, 1.0 / (1.0 + np.exp(-(h @ w2)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    has_pillow = importlib.util.find_spec("PIL") is not None
    has_psutil = importlib.util.find_spec("psutil") is not None
    if not has_pillow:
        print('skipping images: Pillow is not installed (pip install "tracker-core[media]")')
    if not has_psutil:
        print('skipping system metrics: psutil is not installed (pip install "tracker-core[system]")')
    rng = np.random.default_rng(0)
    x, y = rings(rng, 1000)
    w1, b1, w2 = rng.normal(size=(2, 16)), np.zeros(16), rng.normal(size=16) * 0.1
    lr = 0.5
    with tracker.start_run(project="capture", name="rings", config={"hidden": 16, "lr": lr},
                           tags=["example"], system_metrics=0.1) as run:
        for step in range(args.steps):
            h, p = forward(x, w1, b1, w2)
            loss = -np.mean(y * np.log(p + 1e-9) + (1 - y) * np.log(1 - p + 1e-9))
            d = (p - y) / len(y)
            gw2 = h.T @ d
            dh = np.outer(d, w2) * (1 - h**2)
            w1 -= lr * (x.T @ dh)
            b1 -= lr * dh.sum(0)
            w2 -= lr * gw2
            run.log({"loss": loss, "accuracy": np.mean((p > 0.5) == y)}, step=step)
            if step % 25 == 0 or step == args.steps - 1:
                run.log_histogram("hidden.weights", w1)          # at the latest step: `step`
                run.log_histogram("output.grad", gw2, bins=16)
                if has_pillow:
                    run.log_image("decision_surface", surface(w1, b1, w2), caption=f"step {step}")
        with tempfile.TemporaryDirectory() as tmp:
            weights = Path(tmp) / "weights.npz"
            np.savez(weights, w1=w1, b1=b1, w2=w2)
            run.log_artifact(weights, kind="model")
            preds = Path(tmp) / "predictions"
            for split, idx in (("train", slice(0, 800)), ("test", slice(800, None))):
                (preds / split).mkdir(parents=True)
                # Same file name in two subfolders: both are kept (a folder is one artifact with a manifest).
                (preds / split / "preds.json").write_text(json.dumps((p[idx] > 0.5).astype(int).tolist()))
            run.log_artifact(preds, kind="predictions")
    tracker_cmd = [sys.executable, "-m", "tracker"]
    subprocess.run([*tracker_cmd, "artifacts", run.id], check=True)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "weights.npz"
        subprocess.run([*tracker_cmd, "get", run.id, "weights.npz", "-o", str(out)], check=True,
                       stdout=subprocess.DEVNULL)
        with np.load(out) as back:
            print(f"copied back out, hashes checked: weights.npz with w1 of shape {back['w1'].shape}")
    subprocess.run([*tracker_cmd, "summary", run.id, "--schema", "histogram"], check=True)
    if has_psutil:
        subprocess.run([*tracker_cmd, "summary", run.id, "--schema", "system"], check=True)


if __name__ == "__main__":
    main()
