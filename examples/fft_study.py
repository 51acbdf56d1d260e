"""A small learned-FFT study, logged with tracker and the FFT study plugin.

Fits the twiddles of a 64-point radix-2 butterfly network to the exact FFT by
gradient descent (Adam), on Hann-windowed frames of a synthetic audio signal:

- ``butterfly``: one free complex twiddle per butterfly;
- ``unitary``: one angle per butterfly (twiddles of magnitude 1);
- ``gated``: free twiddles, one gate per butterfly and a complex frequency
  mask, with a penalty on the mean gate that pushes unneeded butterflies
  towards a pass-through;
- ``int8``: the trained ``butterfly`` twiddles quantised to int8 per stage;
- ``exact``: the butterfly recursion with the exact twiddles (the reference).

Every ``fft.*`` schema is logged (loss points, parameter counts, gate heatmaps,
a loss landscape over two twiddle angles, training traces) into the store of
tracker.toml / TRACKER_STORE (``./.tracker`` by default). The script then
prints ``tracker summary`` of the run and writes the HTML report.

    pip install -e . -e "plugins/fft_study[report]"
    python examples/fft_study.py --steps 400 --report fft_report.html
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
from tracker_fft_study import (
    butterfly_apply,
    butterfly_backward,
    exact_twiddles,
    gate_heatmap,
    mel_filterbank,
    num_stages,
    spectral_errors,
    twiddle_param_count,
)

import tracker

N_FFT = 64
SAMPLE_RATE = 16000.0
N_MELS = 8
GATE_PENALTY = 0.02


def make_frames(seconds: float, rng: np.random.Generator) -> np.ndarray:
    """Hann-windowed 64-sample frames (hop 32) of a synthetic audio signal.

    Two harmonic tones with vibrato, a chirp and a little noise: most energy at
    low frequencies, like speech or music.
    """
    t = np.arange(int(seconds * SAMPLE_RATE)) / SAMPLE_RATE
    signal = np.zeros_like(t)
    for f0, amp in ((220.0, 1.0), (330.0, 0.6)):
        phase = 2 * np.pi * f0 * t + 3.0 * np.sin(2 * np.pi * 5.0 * t)
        for harmonic in range(1, 6):
            signal += amp / harmonic * np.sin(harmonic * phase)
    signal += 0.3 * np.sin(2 * np.pi * (500.0 * t + 1500.0 * t**2))
    signal += 0.05 * rng.normal(size=t.size)
    starts = np.arange(0, t.size - N_FFT, N_FFT // 2)
    return signal[starts[:, None] + np.arange(N_FFT)] * np.hanning(N_FFT)


class Adam:
    """Adam on a dict of numpy parameters."""

    def __init__(self, params: dict[str, np.ndarray], lr: float) -> None:
        self.params, self.lr, self.t = params, lr, 0
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, grads: dict[str, np.ndarray]) -> None:
        self.t += 1
        for k, g in grads.items():
            self.m[k] = 0.9 * self.m[k] + 0.1 * g
            self.v[k] = 0.999 * self.v[k] + 0.001 * g**2
            m_hat, v_hat = self.m[k] / (1 - 0.9**self.t), self.v[k] / (1 - 0.999**self.t)
            self.params[k] -= self.lr * m_hat / (np.sqrt(v_hat) + 1e-8)


def sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


class Model:
    """A butterfly network variant: parameters, forward pass and gradients."""

    def __init__(self, variant: str, rng: np.random.Generator) -> None:
        self.variant = variant
        shape = (num_stages(N_FFT), N_FFT // 2)
        if variant == "unitary":
            self.params = {"angle": rng.uniform(-np.pi, np.pi, size=shape)}
        else:
            angle = rng.uniform(-np.pi, np.pi, size=shape)
            self.params = {"tw": np.stack([np.cos(angle), np.sin(angle)], axis=-1)}
        if variant == "gated":
            self.params["gate_logit"] = np.full(shape, 3.0)
            self.params["mask"] = np.stack([np.ones(N_FFT), np.zeros(N_FFT)], axis=-1)

    def twiddles(self) -> np.ndarray:
        if self.variant == "unitary":
            a = self.params["angle"]
            return np.stack([np.cos(a), np.sin(a)], axis=-1)
        return self.params["tw"]

    def gates(self) -> np.ndarray | None:
        return sigmoid(self.params["gate_logit"]) if self.variant == "gated" else None

    def mask(self) -> np.ndarray:
        if self.variant != "gated":
            return np.ones(N_FFT, dtype=complex)
        return self.params["mask"][:, 0] + 1j * self.params["mask"][:, 1]

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return butterfly_apply(x, self.twiddles(), self.gates()) * self.mask()

    def loss_and_grads(self, x: np.ndarray, target: np.ndarray):
        """Relative squared spectral error (+ gate penalty) and its gradients."""
        y_net = butterfly_apply(x, self.twiddles(), self.gates())
        y = y_net * self.mask()
        scale = float(np.sum(np.abs(target) ** 2))
        loss = float(np.sum(np.abs(y - target) ** 2)) / scale
        grad_y = 2.0 * (y - target) / scale
        grad_tw, grad_g = butterfly_backward(x, self.twiddles(), self.gates(),
                                             grad_y * np.conj(self.mask()))
        grads = {}
        if self.variant == "unitary":
            a = self.params["angle"]
            grads["angle"] = -np.sin(a) * grad_tw[..., 0] + np.cos(a) * grad_tw[..., 1]
        else:
            grads["tw"] = grad_tw
        if self.variant == "gated":
            g = self.gates()
            loss += GATE_PENALTY * float(g.mean())
            grad_g = grad_g + GATE_PENALTY / g.size
            grads["gate_logit"] = grad_g * g * (1.0 - g)
            grad_mask = np.sum(np.conj(y_net) * grad_y, axis=0)
            grads["mask"] = np.stack([grad_mask.real, grad_mask.imag], axis=-1)
        return loss, grads

    def param_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(("twiddles", "gates", "freq_mask", "denoiser", "unitary",
                                "mel_filters", "q8_packed"), 0)
        if self.variant == "unitary":
            counts["unitary"] = self.params["angle"].size
        else:
            counts["twiddles"] = twiddle_param_count(N_FFT)
        if self.variant == "gated":
            counts["gates"] = self.params["gate_logit"].size
            counts["freq_mask"] = self.params["mask"].size
        return counts


def evaluate(model, frames: np.ndarray, mel_fb: np.ndarray) -> dict[str, float]:
    target = np.fft.fft(frames)
    errs = spectral_errors(model(frames), target, mel_fb)
    gates = model.gates() if hasattr(model, "gates") else None
    errs["mean_gate"] = 1.0 if gates is None else float(gates.mean())
    errs["total_loss"] = errs["spec_err"] + (
        GATE_PENALTY * errs["mean_gate"] if gates is not None else 0.0)
    return errs


class Fixed:
    """A network with fixed twiddles (exact, or dequantised int8)."""

    def __init__(self, twiddles: np.ndarray) -> None:
        self.tw = twiddles

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return butterfly_apply(x, self.tw)

    def gates(self) -> None:
        return None


def quantise_int8(tw: np.ndarray) -> np.ndarray:
    """Symmetric per-stage int8 quantisation of the twiddles; returns them dequantised."""
    scale = np.abs(tw).reshape(tw.shape[0], -1).max(axis=1) / 127.0
    q = np.clip(np.round(tw / scale[:, None, None]), -127, 127).astype(np.int8)
    return q.astype(np.float64) * scale[:, None, None]


def train(run, model_id: str, model: Model, train_frames, eval_frames, mel_fb, args, rng):
    opt = Adam(model.params, lr=args.lr)
    for step in range(args.steps + 1):
        if step % args.eval_every == 0 or step == args.steps:
            errs = evaluate(model, eval_frames, mel_fb)
            run.log_record("fft.loss_point", step=step, model_id=model_id, **errs)
            run.log({f"{model_id}/spec_err": errs["spec_err"]}, step=step)
        if model.variant == "gated" and step % max(1, args.steps // 4) == 0:
            heat = gate_heatmap(model.gates(), N_FFT, np.abs(model.mask()),
                                twiddles=model.twiddles(), model_id=model_id)
            run.log_record("fft.heatmap", heat, step=step)
        if step == args.steps:
            break
        batch = train_frames[rng.choice(len(train_frames), size=args.batch, replace=False)]
        _, grads = model.loss_and_grads(batch, np.fft.fft(batch))
        opt.step(grads)
    run.log_record("fft.params", model_id=model_id, variant=model.variant, n_fft=N_FFT,
                   **model.param_counts())
    run.log_record("fft.trace", model_id=model_id, variant=model.variant, n_fft=N_FFT,
                   batch=args.batch, train_steps=args.steps,
                   final_mel_err=errs["mel_err"], final_spec_err=errs["spec_err"])
    return errs


def log_fixed(run, model_id, variant, model, counts, eval_frames, mel_fb, step):
    errs = evaluate(model, eval_frames, mel_fb)
    if variant != "exact":  # the exact reference is the floor, rounding error only
        run.log_record("fft.loss_point", step=step, model_id=model_id, **errs)
    run.log_record("fft.params", model_id=model_id, variant=variant, n_fft=N_FFT, **counts)
    run.log_record("fft.trace", model_id=model_id, variant=variant, n_fft=N_FFT,
                   batch=len(eval_frames), train_steps=0,
                   final_mel_err=errs["mel_err"], final_spec_err=errs["spec_err"])
    return errs


def landscape(run, model_id: str, model: Model, eval_frames, points: int, step: int) -> None:
    """Loss over the angles of two butterflies of the trained unitary model.

    Both butterflies feed the low-frequency bins that hold most of the signal's
    energy, so the loss is sensitive to them.
    """
    (s1, b1), (s2, b2) = (num_stages(N_FFT) - 1, 1), (num_stages(N_FFT) - 2, 1)
    offsets = np.linspace(-np.pi, np.pi, points)
    base = model.params["angle"].copy()
    x = base[s1, b1] + offsets
    y = base[s2, b2] + offsets
    target = np.fft.fft(eval_frames)
    scale = float(np.sum(np.abs(target) ** 2))
    z = np.empty((points, points))
    for i, yi in enumerate(y):
        for j, xj in enumerate(x):
            model.params["angle"][s1, b1], model.params["angle"][s2, b2] = xj, yi
            z[i, j] = float(np.sum(np.abs(model(eval_frames) - target) ** 2)) / scale
    model.params["angle"][:] = base
    run.log_record("fft.landscape", step=step, model_id=model_id,
                   x_label=f"angle of stage {s1} butterfly {b1} (rad)",
                   y_label=f"angle of stage {s2} butterfly {b2} (rad)", x=x, y=y, z=z)


def cli_tracker(store: Path, *args: str) -> None:
    """Run the tracker command line on the same store, as a user would."""
    subprocess.run([sys.executable, "-m", "tracker", "--store", str(store), *args], check=True)


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400, help="Adam steps per model")
    parser.add_argument("--batch", type=int, default=128, help="frames per step")
    parser.add_argument("--lr", type=float, default=0.05, help="Adam learning rate")
    parser.add_argument("--eval-every", type=int, default=10)
    parser.add_argument("--landscape-points", type=int, default=41)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--report", type=Path, default=Path("fft_report.html"))
    parser.add_argument("--no-report", action="store_true", help="skip the HTML report")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    frames = make_frames(1.0, rng)
    order = rng.permutation(len(frames))
    train_frames, eval_frames = frames[order[64:]], frames[order[:64]]
    mel_fb = mel_filterbank(N_MELS, N_FFT, SAMPLE_RATE)
    config = {"n_fft": N_FFT, "steps": args.steps, "batch": args.batch, "lr": args.lr,
              "gate_penalty": GATE_PENALTY, "seed": args.seed, "n_mels": N_MELS}
    with tracker.start_run(project="fft-study", name="butterfly-64", config=config) as run:
        models = {}
        for variant in ("butterfly", "unitary", "gated"):
            models[variant] = Model(variant, rng)
            errs = train(run, variant, models[variant], train_frames, eval_frames, mel_fb,
                         args, rng)
            print(f"{variant:>9}: spec_err {errs['spec_err']:.3g}, mel_err {errs['mel_err']:.3g}")
        trained = models["butterfly"]
        run.log_record("fft.heatmap", gate_heatmap(np.ones(trained.params["tw"].shape[:2]),
                       N_FFT, twiddles=trained.twiddles(), model_id="butterfly"), step=args.steps)
        # int8 twiddles packed four to a 32-bit word; the per-stage scales stay
        # float32 and are counted as twiddle parameters.
        q8_words = -(-twiddle_param_count(N_FFT) // 4)
        counts = dict.fromkeys(("gates", "freq_mask", "denoiser", "unitary", "mel_filters"), 0)
        log_fixed(run, "int8", "int8", Fixed(quantise_int8(trained.twiddles())),
                  {**counts, "twiddles": num_stages(N_FFT), "q8_packed": q8_words},
                  eval_frames, mel_fb, args.steps)
        log_fixed(run, "exact", "exact", Fixed(exact_twiddles(N_FFT)),
                  {**counts, "twiddles": twiddle_param_count(N_FFT), "q8_packed": 0},
                  eval_frames, mel_fb, args.steps)
        landscape(run, "unitary", models["unitary"], eval_frames, args.landscape_points,
                  args.steps)
    store = Path(run.path).parent.parent
    cli_tracker(store, "summary", run.id)
    if args.no_report:
        pass
    elif importlib.util.find_spec("matplotlib") is None:
        print('no report: it needs matplotlib, pip install "tracker-fft-study[report]"')
    else:
        cli_tracker(store, "fft", "report", run.id, "-o", str(args.report))
    return run.id


if __name__ == "__main__":
    main()
