"""Radix-2 butterfly networks in numpy: sizes, exact twiddles, forward and backward passes.

Layout used throughout the plugin: an ``n_fft``-point network has
``num_stages(n_fft)`` stages of ``n_fft // 2`` butterflies. Stage ``s`` pairs
the elements ``i = g * 2m + k`` and ``j = i + m`` (``m = 2**s``) of the
bit-reversed input, and butterfly ``b = g * m + k`` of that stage owns the
twiddle ``twiddles[s, b] = (re, im)``. With the exact twiddles
``exp(-2j*pi*k / (2m))`` the network computes ``numpy.fft.fft``.

A gate ``g`` in [0, 1] blends a butterfly with a pass-through: ``g = 1`` is the
butterfly, ``g = 0`` leaves its two inputs unchanged (the butterfly is pruned).
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "BYTES_PER_PARAM",
    "bit_reverse_permutation",
    "butterfly_apply",
    "butterfly_backward",
    "exact_twiddles",
    "learned_model_params",
    "num_stages",
    "twiddle_param_count",
]

#: Memory of one parameter: a float32.
BYTES_PER_PARAM = 4


def num_stages(n_fft: int) -> int:
    """Number of radix-2 stages of an ``n_fft``-point FFT, ``log2(n_fft)``.

    :param n_fft: transform size, a power of two >= 2.
    :raises ValueError: when ``n_fft`` is not an int power of two >= 2.
    """
    if isinstance(n_fft, bool) or not isinstance(n_fft, numbers.Integral):
        raise ValueError(f"n_fft: expected an int power of two >= 2, given {n_fft!r}")
    n = int(n_fft)
    if n < 2 or n & (n - 1):
        raise ValueError(f"n_fft: expected a power of two >= 2, given {n}")
    return n.bit_length() - 1


def twiddle_param_count(n_fft: int) -> int:
    """Real parameters of one free complex twiddle per butterfly: ``stages * n_fft/2 * 2``."""
    return num_stages(n_fft) * (int(n_fft) // 2) * 2


def learned_model_params(n_fft: int, n_mels: int) -> dict[str, int]:
    """Parameter breakdown of the learned model, keyed like the ``fft.params`` fields.

    The model has free twiddles, one gate per butterfly, a complex frequency
    mask (``2 * n_fft``), a denoiser (``4 * n_fft``) and mel filters
    (``n_mels * (n_fft/2 + 1)``); it has no unitary or int8-packed part. As in
    the original, the breakdown also gives ``total_params`` (the sum of the
    counts) and ``memory_bytes`` (4 bytes per parameter, float32), which the
    ``fft.params`` record derives the same way, so
    ``FFTParams(model_id=..., variant=..., n_fft=n_fft, **learned_model_params(...))``
    and ``run.log_record("fft.params", ..., **learned_model_params(...))`` build its record.

    :param n_fft: transform size, a power of two >= 2.
    :param n_mels: number of mel filters, an int >= 0.
    :raises ValueError: for a bad ``n_fft`` or a negative ``n_mels``.
    """
    stages = num_stages(n_fft)
    if isinstance(n_mels, bool) or not isinstance(n_mels, numbers.Integral) or n_mels < 0:
        raise ValueError(f"n_mels: expected an int >= 0, given {n_mels!r}")
    n = int(n_fft)
    counts = {
        "twiddles": twiddle_param_count(n),
        "gates": stages * (n // 2),
        "freq_mask": 2 * n,
        "denoiser": 4 * n,
        "unitary": 0,
        "mel_filters": int(n_mels) * (n // 2 + 1),
        "q8_packed": 0,
    }
    total = sum(counts.values())
    return {**counts, "total_params": total, "memory_bytes": BYTES_PER_PARAM * total}


def exact_twiddles(n_fft: int) -> np.ndarray:
    """The radix-2 twiddle factors, interleaved re/im: shape ``(stages, n_fft/2, 2)``.

    ``twiddles[s, b]`` is ``exp(-2j*pi*k / 2**(s+1))`` with ``k = b % 2**s``
    (see the module docstring for the butterfly numbering).
    """
    stages = num_stages(n_fft)
    half = int(n_fft) // 2
    b = np.arange(half)
    out = np.empty((stages, half, 2), dtype=np.float64)
    for s in range(stages):
        m = 1 << s
        angle = -2.0 * np.pi * (b % m) / (2 * m)
        out[s, :, 0] = np.cos(angle)
        out[s, :, 1] = np.sin(angle)
    return out


def bit_reverse_permutation(n_fft: int) -> np.ndarray:
    """Indices that put a length-``n_fft`` vector in bit-reversed order."""
    stages = num_stages(n_fft)
    idx = np.arange(int(n_fft))
    rev = np.zeros_like(idx)
    for bit in range(stages):
        rev |= ((idx >> bit) & 1) << (stages - 1 - bit)
    return rev


def _as_complex_twiddles(twiddles: np.ndarray, n_fft: int) -> np.ndarray:
    tw = np.asarray(twiddles, dtype=np.float64)
    expected = (num_stages(n_fft), n_fft // 2, 2)
    if tw.shape != expected:
        raise ValueError(f"twiddles: expected shape {expected}, given {tw.shape}")
    return tw[..., 0] + 1j * tw[..., 1]


def _as_gates(gates: np.ndarray | None, n_fft: int) -> np.ndarray | None:
    if gates is None:
        return None
    g = np.asarray(gates, dtype=np.float64)
    stages = num_stages(n_fft)
    if g.size != stages * (n_fft // 2):
        raise ValueError(
            f"gates: expected stages*butterflies = {stages * (n_fft // 2)} values, given {g.size}"
        )
    return g.reshape(stages, n_fft // 2)


def _forward(x, w, gates, keep: bool):
    n = x.shape[-1]
    lead = x.shape[:-1]
    y = np.asarray(x, dtype=np.complex128)[..., bit_reverse_permutation(n)]
    inputs = []
    for s in range(w.shape[0]):
        m = 1 << s
        groups = n // (2 * m)
        pairs = y.reshape(*lead, groups, 2, m)
        a, b = pairs[..., 0, :], pairs[..., 1, :]
        if keep:
            inputs.append((a, b))
        wb = w[s].reshape(groups, m) * b
        if gates is None:
            p, q = a + wb, a - wb
        else:
            g = gates[s].reshape(groups, m)
            p = a + g * wb
            q = g * (a - wb) + (1.0 - g) * b
        y = np.stack([p, q], axis=-2).reshape(*lead, n)
    return y, inputs


def butterfly_apply(x: np.ndarray, twiddles: np.ndarray, gates: np.ndarray | None = None):
    """Run the butterfly network on the last axis of ``x``.

    :param x: real or complex array ``(..., n_fft)``.
    :param twiddles: ``(stages, n_fft/2, 2)`` interleaved re/im twiddles.
    :param gates: optional gates in [0, 1], ``stages * n_fft/2`` of them (flat,
        row = stage, or shaped ``(stages, n_fft/2)``); ``None`` means all ones.
    :returns: complex array shaped like ``x``; equals ``numpy.fft.fft(x)`` for
        :func:`exact_twiddles` and no gates.
    """
    x = np.asarray(x)
    n = x.shape[-1]
    w = _as_complex_twiddles(twiddles, n)
    y, _ = _forward(x, w, _as_gates(gates, n), keep=False)
    return y


def butterfly_backward(
    x: np.ndarray,
    twiddles: np.ndarray,
    gates: np.ndarray | None,
    grad_out: np.ndarray,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Gradient of a real loss with respect to the twiddles and gates.

    ``grad_out`` is ``dL/dRe(y) + 1j * dL/dIm(y)`` for ``y = butterfly_apply(x, ...)``.

    :returns: ``(grad_twiddles, grad_gates)``: ``(stages, n_fft/2, 2)`` re/im
        derivatives, and ``(stages, n_fft/2)`` gate derivatives (``None`` when
        ``gates`` is ``None``).
    """
    x = np.asarray(x)
    n = x.shape[-1]
    w = _as_complex_twiddles(twiddles, n)
    g_all = _as_gates(gates, n)
    _, inputs = _forward(x, w, g_all, keep=True)
    lead = x.shape[:-1]
    batch_axes = tuple(range(len(lead)))
    grad_w = np.zeros_like(w)
    grad_g = None if g_all is None else np.zeros(g_all.shape)
    gy = np.asarray(grad_out, dtype=np.complex128)
    for s in reversed(range(w.shape[0])):
        m = 1 << s
        groups = n // (2 * m)
        a, b = inputs[s]
        pairs = gy.reshape(*lead, groups, 2, m)
        gp, gq = pairs[..., 0, :], pairs[..., 1, :]
        ws = w[s].reshape(groups, m)
        if g_all is None:
            grad_w[s] = (np.conj(b) * (gp - gq)).sum(axis=batch_axes).reshape(-1)
            ga, gb = gp + gq, np.conj(ws) * (gp - gq)
        else:
            g = g_all[s].reshape(groups, m)
            wb = ws * b
            grad_w[s] = (np.conj(g * b) * (gp - gq)).sum(axis=batch_axes).reshape(-1)
            dg = np.real(np.conj(wb) * gp) + np.real(np.conj(a - wb - b) * gq)
            grad_g[s] = dg.sum(axis=batch_axes).reshape(-1)
            ga = gp + g * gq
            gb = np.conj(g * ws) * gp + np.conj(1.0 - g - g * ws) * gq
        gy = np.stack([ga, gb], axis=-2).reshape(*lead, n)
    grad_tw = np.stack([grad_w.real, grad_w.imag], axis=-1)
    return grad_tw, grad_g
