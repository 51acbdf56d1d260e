"""Per-tensor against per-channel quantisation error, logged with tracker and the
quant analysis plugin.

Three tensors of the kind a real network has:

- ``conv.weight``: 32 output channels whose magnitudes span almost three
  decades (as after folding batch norm into a convolution), heavy-tailed;
- ``fc.weight``: 64 rows of similar magnitude;
- ``relu.out``: non-negative activations, 64 channels of different magnitude.

Each is quantised at 4 and 8 bits, per tensor and per channel (the weights
symmetric, the activations symmetric and asymmetric), and every configuration
is logged as a ``quant.error`` record. Then the scale sensitivity, a
4-against-8-bit comparison and the cost of a few large outliers in an
embedding table (full range against a 99.9th-percentile clip) are logged as
metrics. Everything goes to the store of tracker.toml / TRACKER_STORE
(``./.tracker`` by default); the script ends by printing ``tracker summary``
of the run.

    pip install -e . -e plugins/quant_analysis
    python examples/quant_analysis.py
"""

from __future__ import annotations

import argparse
import subprocess
import sys

import numpy as np
from tracker_quant_analysis import (
    analyze_outlier_impact,
    bit_width_errors,
    calibrate,
    clipping_study,
    compare_bit_widths,
    error_record,
    scale_sensitivity,
)

import tracker


def make_tensors(rng: np.random.Generator) -> dict[str, tuple[np.ndarray, tuple[str, ...]]]:
    """The tensors to analyse (channels on the first axis) and the modes to try on each."""
    conv_scales = 10.0 ** rng.uniform(-2.8, 0.0, size=(32, 1))
    conv = rng.standard_t(df=5, size=(32, 3 * 3 * 16)) * conv_scales * 0.1
    fc = rng.normal(size=(64, 128)) * rng.uniform(0.8, 1.2, size=(64, 1)) * 0.05
    act_scales = 10.0 ** rng.uniform(-1.5, 0.5, size=(64, 1))
    act = np.maximum(rng.normal(size=(64, 256)) + 0.3, 0.0) * act_scales
    return {
        "conv.weight": (conv, ("symmetric",)),
        "fc.weight": (fc, ("symmetric",)),
        "relu.out": (act, ("symmetric", "asymmetric")),
    }


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    tensors = make_tensors(rng)
    config = {"seed": args.seed, "bits": [4, 8], "outlier_threshold": 3.0,
              "tensors": {name: list(t.shape) for name, (t, _) in tensors.items()}}

    with tracker.start_run(project="quant-analysis", name="per-tensor-vs-per-channel",
                           config=config) as run:
        records = {}
        for name, (values, modes) in tensors.items():
            for bits in (4, 8):
                for mode in modes:
                    for granularity in ("per_tensor", "per_channel"):
                        params = calibrate(values, bits, mode, granularity,
                                           num_channels=values.shape[0])
                        rec = error_record(name, values, params)
                        run.log_record("quant.error", rec)
                        records[(name, bits, mode, granularity)] = rec

        conv = tensors["conv.weight"][0]
        metrics = {}
        for granularity in ("per_tensor", "per_channel"):
            params = calibrate(conv, 4, "symmetric", granularity, num_channels=conv.shape[0])
            sens = scale_sensitivity(conv, params, delta=0.05)
            metrics[f"conv_4bit_{granularity}_scale_sensitivity"] = sens.sensitivity
        bits = bit_width_errors(conv, bits=(4, 8), granularity="per_channel",
                                num_channels=conv.shape[0])
        metrics["conv_per_channel_sqnr_gain_4_to_8_bits_db"] = bits[8].sqnr_db - bits[4].sqnr_db
        mse_4bit, mse_8bit, improvement = compare_bit_widths(conv)
        metrics.update(conv_per_tensor_mse_4bit=mse_4bit, conv_per_tensor_mse_8bit=mse_8bit,
                       conv_per_tensor_mse_improvement_4_to_8_bits=improvement)

        embedding = rng.normal(size=(1000, 32)) * 0.1
        embedding.flat[rng.choice(embedding.size, size=8, replace=False)] *= 20.0
        for b in (4, 8):
            study = clipping_study(embedding, percentile=99.9, bits=b)
            metrics[f"embedding_{b}bit_sqnr_full_db"] = study.sqnr_full_db
            metrics[f"embedding_{b}bit_sqnr_clipped_db"] = study.sqnr_clipped_db
        metrics["embedding_8bit_outlier_impact"] = analyze_outlier_impact(embedding, 99.9).impact
        run.log(metrics)

    for name, bits, mode in (("conv.weight", 8, "symmetric"), ("conv.weight", 4, "symmetric"),
                             ("fc.weight", 8, "symmetric"), ("relu.out", 8, "asymmetric")):
        pt = records[(name, bits, mode, "per_tensor")]
        pc = records[(name, bits, mode, "per_channel")]
        print(f"{name} {bits}-bit {mode}: MSE per tensor {pt.mse:.3e}, per channel {pc.mse:.3e} "
              f"({pt.mse / pc.mse:.1f}x lower), SQNR {pt.sqnr_db:.1f} -> {pc.sqnr_db:.1f} dB",
              flush=True)
    print(f"run {run.id}: " + ", ".join(f"{k} {v:.3g}" for k, v in metrics.items()), flush=True)
    subprocess.run([sys.executable, "-m", "tracker", "summary", run.id], check=True)
    return run.id


if __name__ == "__main__":
    main()
