"""A lab's week in one script: a dataset, two ablations of three seeds, a model in `prod`, an evaluation.

A preprocessing run makes a dataset and logs it as an artifact; six training
runs (two hidden sizes, three seeds each, one `group` per size) use it, print
their epochs as a training script does (the console is kept in the run), and
log their model under one name, each a new version; the best is promoted to
`prod`; an evaluation run loads `model:prod` and logs what it sees as media (a
short video of its decision boundary, a clip that sounds it out), shown in the
run page's Media panel. Then the CLI answers what a lab
asks afterwards: the groups as mean ± std across seeds, the lineage from the
dataset to the evaluation, what the evaluation printed, why two runs differ,
and one HTML report to send to someone without the dashboard.

Usage::

    python examples/lab.py [--epochs 60]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import tracker

PROJECT = "rings-lab"


def make_dataset(folder: Path, seed: int = 0, n: int = 1200) -> Path:
    """Two noisy concentric rings as an .npz file: points ``x`` and labels ``y``."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    angle = rng.uniform(0, 2 * np.pi, n)
    radius = 1.0 + y + 0.25 * rng.normal(size=n)
    x = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
    path = folder / "rings.npz"
    np.savez(path, x=x, y=y.astype(np.float64))
    return path


def forward(x: np.ndarray, w1: np.ndarray, b1: np.ndarray, w2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    h = np.tanh(x @ w1 + b1)
    return h, 1.0 / (1.0 + np.exp(-(h @ w2)))


def train(data: Path, hidden: int, seed: int, epochs: int, folder: Path) -> tuple[Path, float]:
    """Full-batch gradient descent on a one-hidden-layer network; prints and logs each epoch."""
    d = np.load(data)
    x, y = d["x"], d["y"]
    rng = np.random.default_rng(seed)
    w1 = rng.normal(scale=1.0, size=(2, hidden))
    b1 = np.zeros(hidden)
    w2 = rng.normal(scale=0.5, size=hidden)
    loss = float("nan")
    for epoch in range(epochs):
        h, p = forward(x, w1, b1, w2)
        loss = float(-np.mean(y * np.log(p + 1e-9) + (1 - y) * np.log(1 - p + 1e-9)))
        acc = float(np.mean((p > 0.5) == y))
        g = (p - y) / len(y)
        gh = np.outer(g, w2) * (1 - h**2)
        w2 -= 2.0 * (h.T @ g)
        w1 -= 2.0 * (x.T @ gh)
        b1 -= 2.0 * gh.sum(axis=0)
        tracker.log({"loss": loss, "acc": acc})
        if epoch % 20 == 0 or epoch == epochs - 1:
            print(f"epoch {epoch:3d}  loss {loss:.4f}  acc {acc:.3f}")
    path = folder / f"mlp-h{hidden}-s{seed}.npz"
    np.savez(path, w1=w1, b1=b1, w2=w2)
    return path, loss


def boundary_media(w: dict, x: np.ndarray, y: np.ndarray) -> dict:
    """The model's decision over the plane as media: a video revealing the holdout points on its probability
    map, and a clip whose pitch follows the probability along a ray from the centre outwards."""
    import importlib.util

    side = 64
    axis = np.linspace(-3.5, 3.5, side)
    grid = np.stack(np.meshgrid(axis, -axis), axis=-1).reshape(-1, 2)
    prob = forward(grid, w["w1"], w["b1"], w["w2"])[1].reshape(side, side)
    base = np.stack([prob * 200 + 30, np.full_like(prob, 40), (1 - prob) * 200 + 30]).astype(np.uint8)
    frames = np.repeat(base[None], 12, axis=0)
    px = np.clip(((x + 3.5) / 7 * (side - 1)).round().astype(int), 0, side - 1)
    for t in range(12):  # the holdout points appear a twelfth at a time, white on the map
        shown = slice(0, (t + 1) * len(x) // 12)
        frames[t, :, side - 1 - px[shown, 1], px[shown, 0]] = 255
    media = {}
    # mp4 needs PyAV (the media extra); without it a gif through Pillow; with neither, no video.
    if importlib.util.find_spec("av") is not None:
        media["boundary"] = tracker.Video(frames, fps=6, format="mp4", caption="holdout points on p(outer ring)")
    elif importlib.util.find_spec("PIL") is not None:
        media["boundary"] = tracker.Video(frames, fps=6, format="gif", caption="holdout points on p(outer ring)")
    rate, seconds = 8000, 1.5
    t = np.arange(int(rate * seconds)) / rate
    ray = np.stack([t / seconds * 3.5, np.zeros_like(t)], axis=1)
    p = forward(ray, w["w1"], w["b1"], w["w2"])[1]
    pitch = 220 + 440 * p  # A3 where it says "inner ring", higher and louder towards "outer"
    media["ray"] = tracker.Audio((0.1 + 0.4 * p) * np.sin(2 * np.pi * np.cumsum(pitch) / rate), sample_rate=rate,
                                 caption="pitch = p(outer ring) from the centre outwards")
    return media


def cli(*args: str) -> None:
    print(f"\n$ tracker {' '.join(args)}", flush=True)
    subprocess.run([sys.executable, "-m", "tracker", *args], check=False)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        with tracker.start_run(PROJECT, "prepare rings", job_type="preprocess", system_metrics=False) as run:
            data = run.log_artifact(make_dataset(folder), name="rings", type="dataset")
            print(f"dataset {data.name}:{data.version} ({data.size:,} bytes)")

        results = []
        for hidden in (4, 16):
            for seed in range(3):
                with tracker.start_run(PROJECT, f"mlp h{hidden} s{seed}", config={"hidden": hidden, "seed": seed},
                                       group=f"hidden-{hidden}", job_type="train", system_metrics=False) as run:
                    dataset = run.use_artifact("rings:latest")
                    weights, loss = train(dataset.file(folder / "in"), hidden, seed, args.epochs, folder)
                    model = run.log_artifact(weights, name="rings-mlp", type="model")
                    results.append((loss, model.version, run.id))
        loss, best_version, best_run = min(results)
        tracker.set_alias(f"rings-mlp:{best_version}", "prod")
        print(f"\nrings-mlp:{best_version} (loss {loss:.4f}) is now rings-mlp:prod")

        with tracker.start_run(PROJECT, "evaluate prod", job_type="eval", system_metrics=False) as run:
            model = run.use_artifact("rings-mlp:prod")
            w = np.load(model.file(folder / "prod"))
            holdout = folder / "holdout"
            holdout.mkdir()
            d = np.load(make_dataset(holdout, seed=1))
            acc = float(np.mean((forward(d["x"], w["w1"], w["b1"], w["w2"])[1] > 0.5) == d["y"]))
            run.log({"holdout_acc": acc, **boundary_media(w, d["x"], d["y"])})
            print(f"holdout accuracy of rings-mlp:{model.version}: {acc:.3f}")
            eval_run = run.id

    other = next(r for _, _, r in results if r != best_run)
    cli("runs", "--project", PROJECT, "--group-by", "group", "-m", "loss", "-m", "acc")
    cli("lineage", "rings-mlp:prod")
    cli("logs", eval_run, "--tail", "5")
    cli("diff", best_run, other)
    cli("report", "--project", PROJECT, "--group-by", "group", "-m", "loss", "-m", "acc",
        "--title", "Rings: hidden size, three seeds each", "-o", "rings-report.html")
    print("rings-report.html is one file with everything inline: open it in any browser, offline.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
