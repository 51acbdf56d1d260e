"""Phase-trained gradient descent on a toy numpy regression, logged with tracker.

The model is ``y ~ tanh(X @ w)``, fitted by gradient descent on the mean
squared error over the whole data set. A :class:`PhaseScheduler` decides each
step: FULL and CORRECT steps compute the full gradient (a pass over all the
data); PREDICT steps reuse the last full gradient and only evaluate the loss.
The scheduler is attached to the run, so every step is a ``phase.step``
record; two plain gradient-descent baselines (the same number of steps, and
the same number of gradient computations) show what the skipped gradients
cost. The run goes to the default store (tracker.toml, ``TRACKER_STORE`` or
``./.tracker``) and its summary is printed by the ``tracker`` command line.

Usage::

    python examples/phase_trainer.py [--steps 600] [--lr 0.05] [--fixed]
"""

from __future__ import annotations

import argparse
import subprocess
import sys

import numpy as np
from tracker_phase_trainer import PhaseScheduler

import tracker


def make_data(rng: np.random.Generator, n: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Inputs and noisy targets of a tanh-of-linear teacher."""
    x = rng.normal(size=(n, d))
    w_true = 2.0 * rng.normal(size=d) / np.sqrt(d)
    y = np.tanh(x @ w_true) + 0.05 * rng.normal(size=n)
    return x, y


def loss_of(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> float:
    """Mean squared error: a forward pass, no gradient."""
    r = np.tanh(x @ w) - y
    return float(np.mean(r * r))


def loss_and_gradient(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """Mean squared error and its full gradient over the whole data set."""
    p = np.tanh(x @ w)
    r = p - y
    return float(np.mean(r * r)), x.T @ (2.0 * r * (1.0 - p * p)) / len(y)


def train_phased(
    scheduler: PhaseScheduler, x: np.ndarray, y: np.ndarray, steps: int, lr: float,
    run: tracker.Run | None = None,
) -> tuple[np.ndarray, int]:
    """Gradient descent where PREDICT steps reuse the last full gradient.

    The scheduler records each step's phase (``phase.step``); with ``run``, the
    loss and the gradients computed so far are also logged as metrics, as a
    training loop would, so the run page charts them.

    :returns: the weights and the number of full gradients computed.
    """
    w = np.zeros(x.shape[1])
    gradient = np.zeros_like(w)
    computed = 0
    for step in range(steps):
        info = scheduler.begin_step()
        if info.compute_full:  # FULL or CORRECT: refresh the gradient
            loss, gradient = loss_and_gradient(w, x, y)
            computed += 1
        else:  # PREDICT: the last full gradient stands in
            loss = loss_of(w, x, y)
        w = w - lr * gradient
        scheduler.end_step(loss)
        if run is not None:
            run.log({"loss": loss, "gradients_computed": computed}, step=step)
    return w, computed


def train_plain(x: np.ndarray, y: np.ndarray, steps: int, lr: float) -> np.ndarray:
    """Plain gradient descent: a full gradient at every step."""
    w = np.zeros(x.shape[1])
    for _ in range(steps):
        _, gradient = loss_and_gradient(w, x, y)
        w = w - lr * gradient
    return w


def main(argv: list[str] | None = None) -> int:
    """Train, log, compare with the baselines, print the run's summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--fixed", action="store_true", help="turn adaptive mode off")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    x, y = make_data(np.random.default_rng(args.seed), n=2000, d=20)
    scheduler = PhaseScheduler(
        full_steps=10, predict_steps=20, correct_every=5, adaptive=not args.fixed
    )
    config = {
        "steps": args.steps,
        "lr": args.lr,
        "seed": args.seed,
        "full_steps": scheduler.full_steps,
        "predict_steps": scheduler.predict_steps,
        "correct_every": scheduler.correct_every,
        "adaptive": scheduler.adaptive,
        "loss_threshold": scheduler.loss_threshold,
    }
    with tracker.start_run(project="phase_trainer", name="toy-regression", config=config) as run:
        scheduler.attach(run)
        w, computed = train_phased(scheduler, x, y, args.steps, args.lr, run)
        final = loss_of(w, x, y)
        same_steps = loss_of(train_plain(x, y, args.steps, args.lr), x, y)
        same_budget = loss_of(train_plain(x, y, computed, args.lr), x, y)
        run.log(
            {
                "final_loss": final,
                "plain_gd_same_steps_loss": same_steps,
                "plain_gd_same_gradients_loss": same_budget,
                "gradients_computed": computed,
                "speedup": scheduler.speedup_ratio,
            },
            step=args.steps,
        )

    stats = scheduler.stats()
    print(f"run {run.id}: {stats.total_steps} steps, {computed} full gradients "
          f"({stats.full} FULL + {stats.correct} CORRECT), speedup {stats.speedup:.3f}")
    print(f"final loss {final:.6f}; plain gradient descent: {same_steps:.6f} with the same "
          f"steps, {same_budget:.6f} with the same {computed} gradients")
    if scheduler.adjustments:
        print(f"adaptive: {len(scheduler.adjustments)} changes, now full_steps "
              f"{scheduler.full_steps}, predict_steps {scheduler.predict_steps}")
    sys.stdout.flush()
    return subprocess.call([sys.executable, "-m", "tracker", "summary", run.id])


if __name__ == "__main__":
    sys.exit(main())
