"""Post-training INT8 quantisation of a small MLP, logged with tracker and the PTQ plugin.

Trains a 20-64-64-4 ReLU network with numpy (mini-batch Adam) to imitate a
random "teacher" network, then quantises its layers after training and
measures what each step costs in test accuracy:

- float16 weights;
- INT8 weights, one scale per tensor (``symmetric_per_tensor_int8``);
- INT8 weights, one scale per output row (``symmetric_per_channel_int8``);
- INT8 weights and INT8 activations, the activation scales taken from a
  :class:`~tracker_ptq.Calibrator` run over training batches.

The per-tensor model is saved in the plugin's binary format, loaded back and
checked to give the same predictions. Training metrics, one ``ptq.layer``
record per layer and scheme, and the final accuracies go to the store of
tracker.toml / TRACKER_STORE (``./.tracker`` by default); the script ends by
printing ``tracker summary`` of the run.

    pip install -e . -e plugins/ptq
    python examples/ptq.py --epochs 20
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from tracker_ptq import (
    Calibrator,
    QuantizedModel,
    from_fp16,
    layer_record,
    quantize_model,
    to_fp16,
)

import tracker

SIZES = [20, 64, 64, 4]
Params = dict[str, tuple[np.ndarray, np.ndarray]]


def init_mlp(rng: np.random.Generator, sizes: list[int]) -> Params:
    """He-initialised layers ``fc1 .. fcN``: weights ``[out, in]`` and a zero bias."""
    return {f"fc{i + 1}": (rng.normal(size=(n_out, n_in)) * np.sqrt(2.0 / n_in), np.zeros(n_out))
            for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True))}


def forward(params: Params, x: np.ndarray, act_quant: Calibrator | None = None) -> list[np.ndarray]:
    """The input of every layer, then the logits. With ``act_quant``, every layer
    input is quantised to INT8 with its calibrated scale first."""
    inputs = []
    h = x
    names = list(params)
    for i, name in enumerate(names):
        if act_quant is not None:
            h = act_quant.fake_quantize(name, h)
        inputs.append(h)
        w, b = params[name]
        h = h @ w.T + b
        if i < len(names) - 1:
            h = np.maximum(h, 0.0)
    return inputs + [h]


def make_data(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Inputs with features of different scales, labelled by a random teacher network."""
    teacher = init_mlp(rng, [20, 16, 4])
    x = rng.normal(size=(n, 20)) * rng.uniform(0.5, 2.0, size=20)
    return x, np.argmax(forward(teacher, x)[-1], axis=1)


def loss_and_grads(params: Params, x: np.ndarray, y: np.ndarray) -> tuple[float, dict]:
    """Softmax cross-entropy and its gradients by backpropagation."""
    acts = forward(params, x)
    logits = acts[-1]
    shifted = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(shifted)
    probs /= probs.sum(axis=1, keepdims=True)
    loss = float(-np.mean(np.log(probs[np.arange(len(y)), y] + 1e-12)))
    delta = probs
    delta[np.arange(len(y)), y] -= 1.0
    delta /= len(y)
    grads = {}
    names = list(params)
    for i in range(len(names) - 1, -1, -1):
        name = names[i]
        grads[name] = (delta.T @ acts[i], delta.sum(axis=0))
        if i > 0:
            delta = (delta @ params[name][0]) * (acts[i] > 0)
    return loss, grads


def accuracy(params: Params, x: np.ndarray, y: np.ndarray,
             act_quant: Calibrator | None = None) -> float:
    return float(np.mean(np.argmax(forward(params, x, act_quant)[-1], axis=1) == y))


def train(run: tracker.Run, params: Params, data: tuple, epochs: int, rng: np.random.Generator,
          lr: float = 3e-3, batch: int = 200) -> Params:
    """Mini-batch Adam; logs loss and accuracies once per epoch."""
    x_train, y_train, x_test, y_test = data
    m = {k: (np.zeros_like(w), np.zeros_like(b)) for k, (w, b) in params.items()}
    v = {k: (np.zeros_like(w), np.zeros_like(b)) for k, (w, b) in params.items()}
    t = 0
    for epoch in range(epochs):
        order = rng.permutation(len(x_train))
        losses = []
        for start in range(0, len(order), batch):
            idx = order[start:start + batch]
            loss, grads = loss_and_grads(params, x_train[idx], y_train[idx])
            losses.append(loss)
            t += 1
            for k in params:
                new = []
                for j in range(2):
                    g = grads[k][j]
                    m[k][j][...] = 0.9 * m[k][j] + 0.1 * g
                    v[k][j][...] = 0.999 * v[k][j] + 0.001 * g * g
                    m_hat, v_hat = m[k][j] / (1 - 0.9**t), v[k][j] / (1 - 0.999**t)
                    new.append(params[k][j] - lr * m_hat / (np.sqrt(v_hat) + 1e-8))
                params[k] = (new[0], new[1])
        run.log({"loss": float(np.mean(losses)),
                 "train_accuracy": accuracy(params, x_train[:2000], y_train[:2000]),
                 "test_accuracy": accuracy(params, x_test, y_test)}, step=epoch)
    return params


def as_float32(params: Params) -> Params:
    return {k: (w.astype(np.float32), b.astype(np.float32)) for k, (w, b) in params.items()}


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    x, y = make_data(rng, 12000)
    data = (x[:10000], y[:10000], x[10000:], y[10000:])
    x_test, y_test = data[2], data[3]
    config = {"sizes": SIZES, "epochs": args.epochs, "seed": args.seed, "optimizer": "adam",
              "lr": 3e-3, "batch": 200, "train": 10000, "test": 2000}

    with tracker.start_run(project="ptq", name="mlp-int8", config=config) as run:
        params = as_float32(train(run, init_mlp(rng, SIZES), data, args.epochs, rng))
        acc_fp32 = accuracy(params, x_test, y_test)

        fp16 = {k: (from_fp16(to_fp16(w)), from_fp16(to_fp16(b))) for k, (w, b) in params.items()}
        per_tensor = quantize_model(params)
        per_channel = quantize_model(params, per_channel=True)
        for model in (per_tensor, per_channel):
            for name, (w, _b) in params.items():
                run.log_record("ptq.layer", layer_record(model[name], w))

        calibrator = Calibrator()
        for batch in np.array_split(data[0][:2000], 10):
            for name, h in zip(params, forward(params, batch)[:-1], strict=True):
                calibrator.observe(name, h)

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "mlp.ptq"
            file_bytes = per_tensor.save(path)
            loaded = QuantizedModel.load(path)
        int8_pt = loaded.dequantize()
        assert accuracy(int8_pt, x_test, y_test) == accuracy(per_tensor.dequantize(), x_test,
                                                             y_test)
        results = {
            "accuracy_fp32": acc_fp32,
            "accuracy_fp16": accuracy(fp16, x_test, y_test),
            "accuracy_int8_per_tensor": accuracy(int8_pt, x_test, y_test),
            "accuracy_int8_per_channel": accuracy(per_channel.dequantize(), x_test, y_test),
            "accuracy_int8_weights_and_activations": accuracy(int8_pt, x_test, y_test, calibrator),
            "bytes_fp32": per_tensor.original_size_bytes,
            "bytes_int8": per_tensor.size_bytes,
            "compression_ratio": per_tensor.compression_ratio,
            "overhead_bytes": per_tensor.overhead_bytes,
            "model_file_bytes": file_bytes,
        }
        results["accuracy_drop_int8_per_tensor"] = acc_fp32 - results["accuracy_int8_per_tensor"]
        results["accuracy_drop_int8_per_channel"] = acc_fp32 - results["accuracy_int8_per_channel"]
        run.log(results, step=args.epochs)

    print(f"run {run.id}: test accuracy fp32 {acc_fp32:.4f}, "
          f"int8 per tensor {results['accuracy_int8_per_tensor']:.4f} "
          f"(drop {results['accuracy_drop_int8_per_tensor']:+.4f}), "
          f"int8 per channel {results['accuracy_int8_per_channel']:.4f}, "
          f"int8 weights+activations {results['accuracy_int8_weights_and_activations']:.4f}; "
          f"weights {results['bytes_fp32']} -> {results['bytes_int8']} bytes "
          f"({results['compression_ratio']:.2f}x), scales and biases "
          f"{results['overhead_bytes']} bytes, file {file_bytes} bytes", flush=True)
    subprocess.run([sys.executable, "-m", "tracker", "summary", run.id], check=True)
    return run.id


if __name__ == "__main__":
    main()
