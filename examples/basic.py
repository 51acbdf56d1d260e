"""Logistic regression on synthetic data with numpy, logged with tracker.

Two runs with different learning rates, so that `tracker compare` has
something to compare: per-step loss, accuracy and gradient norm, the
configuration, tags; then the CLI prints each run and the comparison.

Usage::

    python examples/basic.py [--steps 300]
"""

from __future__ import annotations

import argparse
import subprocess
import sys

import numpy as np

import tracker


def train(lr: float, steps: int, seed: int = 0) -> str:
    """Fit a logistic regression by full-batch gradient descent; returns the run id."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(2000, 10))
    w_true = rng.normal(size=10)
    y = (x @ w_true + 0.5 * rng.normal(size=2000) > 0).astype(np.float64)
    w = np.zeros(10)
    config = {"model": "logistic", "optimizer": {"name": "sgd", "lr": lr}, "steps": steps, "seed": seed}
    with tracker.start_run(project="basic", name=f"logreg-lr{lr}", config=config, tags=["example", "numpy"]) as run:
        for step in range(steps):
            p = 1.0 / (1.0 + np.exp(-(x @ w)))
            loss = -np.mean(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12))
            grad = x.T @ (p - y) / len(y)
            w -= lr * grad
            run.log({"loss": loss, "accuracy": np.mean((p > 0.5) == y), "grad_norm": np.linalg.norm(grad)},
                    step=step)
    return run.id


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    ids = [train(lr, args.steps) for lr in (0.05, 0.5)]
    tracker_cmd = [sys.executable, "-m", "tracker"]
    subprocess.run([*tracker_cmd, "show", ids[1]], check=True)
    print()
    subprocess.run([*tracker_cmd, "compare", *ids], check=False)


if __name__ == "__main__":
    main()
