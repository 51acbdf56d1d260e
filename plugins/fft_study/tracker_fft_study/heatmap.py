"""Build ``fft.heatmap`` records from a model's gates and twiddles."""

from __future__ import annotations

import numpy as np

from .butterfly import exact_twiddles, num_stages
from .record import FFTHeatmap

__all__ = ["gate_heatmap"]


def gate_heatmap(
    gates: np.ndarray,
    n_fft: int,
    freq_mask: np.ndarray | None = None,
    *,
    twiddles: np.ndarray | None = None,
    model_id: str = "",
) -> FFTHeatmap:
    """An ``fft.heatmap`` record of the gates and twiddle magnitudes, stage x butterfly.

    :param gates: ``stages * n_fft/2`` gates in [0, 1], flat (row = stage) or
        shaped ``(stages, n_fft/2)``.
    :param n_fft: transform size, a power of two >= 2.
    :param freq_mask: optional frequency-mask values, stored flat.
    :param twiddles: the model's ``(stages, n_fft/2, 2)`` re/im twiddles; the
        exact ones (magnitude 1) when left out.
    :param model_id: the model the record belongs to.
    :raises ValueError: for a bad ``n_fft``, a wrong number of gates or
        twiddles, or a gate outside [0, 1].
    """
    stages = num_stages(n_fft)
    butterflies = int(n_fft) // 2
    flat = np.asarray(gates, dtype=np.float64).reshape(-1)
    tw = exact_twiddles(n_fft) if twiddles is None else np.asarray(twiddles, dtype=np.float64)
    if tw.shape != (stages, butterflies, 2):
        raise ValueError(
            f"twiddles: expected shape {(stages, butterflies, 2)}, given {tw.shape}"
        )
    outside = np.flatnonzero(~((flat >= 0) & (flat <= 1)))
    if outside.size:
        raise ValueError(f"gates: expected values in [0, 1], given {float(flat[outside[0]])!r} "
                         f"at {int(outside[0])}")
    magnitude = np.hypot(tw[..., 0], tw[..., 1]).reshape(-1)
    mask = None
    if freq_mask is not None:
        mask = [float(v) for v in np.asarray(freq_mask, dtype=np.float64).reshape(-1)]
    return FFTHeatmap(
        model_id=model_id,
        stages=stages,
        butterflies=butterflies,
        gates=[float(v) for v in flat],
        freq_mask=mask,
        twiddle_mag=[float(v) for v in magnitude],
    )
