"""Spectral error measures of the ``fft.loss_point`` schema, in numpy."""

from __future__ import annotations

import numpy as np

from .butterfly import num_stages

__all__ = ["mel_filterbank", "spectral_errors"]


def _hz_to_mel(hz: np.ndarray) -> np.ndarray:
    return 2595.0 * np.log10(1.0 + hz / 700.0)


def _mel_to_hz(mel: np.ndarray) -> np.ndarray:
    return 700.0 * (10.0 ** (mel / 2595.0) - 1.0)


def mel_filterbank(n_mels: int, n_fft: int, sample_rate: float = 16000.0) -> np.ndarray:
    """Triangular mel filters (HTK mel scale) over the ``n_fft/2 + 1`` real-FFT bins.

    :returns: ``(n_mels, n_fft/2 + 1)`` weights; filter ``i`` rises from mel
        point ``i`` to ``i + 1`` and falls to ``i + 2`` of ``n_mels + 2`` points
        equally spaced between 0 Hz and ``sample_rate / 2``.
    """
    num_stages(n_fft)
    if n_mels < 1:
        raise ValueError(f"n_mels: expected an int >= 1, given {n_mels!r}")
    if not sample_rate > 0:
        raise ValueError(f"sample_rate: expected a number > 0, given {sample_rate!r}")
    freqs = np.arange(n_fft // 2 + 1) * sample_rate / n_fft
    edges = _mel_to_hz(np.linspace(0.0, _hz_to_mel(np.float64(sample_rate / 2)), n_mels + 2))
    lower, centre, upper = edges[:-2, None], edges[1:-1, None], edges[2:, None]
    rising = (freqs - lower) / (centre - lower)
    falling = (upper - freqs) / (upper - centre)
    return np.clip(np.minimum(rising, falling), 0.0, None)


def _relative_sq(a: np.ndarray, ref: np.ndarray) -> float:
    num = float(np.sum(np.abs(a - ref) ** 2))
    denom = float(np.sum(np.abs(ref) ** 2))
    return num / denom if denom > 0 else (0.0 if num == 0 else float("inf"))


def spectral_errors(
    spectrum: np.ndarray, reference: np.ndarray, mel_fb: np.ndarray
) -> dict[str, float]:
    """Relative squared errors of a spectrum against a reference spectrum.

    :param spectrum: complex ``(frames, n_fft)`` output of the model under test.
    :param reference: complex ``(frames, n_fft)`` exact spectrum of the same frames.
    :param mel_fb: ``(n_mels, n_fft/2 + 1)`` filters, see :func:`mel_filterbank`.
    :returns: ``spec_err`` (complex spectrum), ``mel_err`` (mel-band powers of
        each frame) and ``welch_err`` (power spectrum averaged over the frames,
        Welch's estimate); each is ``sum(|a - ref|**2) / sum(|ref|**2)``.
    """
    spectrum = np.asarray(spectrum)
    reference = np.asarray(reference)
    if spectrum.shape != reference.shape:
        raise ValueError(
            f"spectrum: expected the reference's shape {reference.shape}, given {spectrum.shape}"
        )
    bins = mel_fb.shape[1]
    spec_err = _relative_sq(spectrum, reference)
    power = np.abs(spectrum[..., :bins]) ** 2
    ref_power = np.abs(reference[..., :bins]) ** 2
    mel_err = _relative_sq(power @ mel_fb.T, ref_power @ mel_fb.T)
    frame_axes = tuple(range(power.ndim - 1))
    welch_err = _relative_sq(power.mean(axis=frame_axes), ref_power.mean(axis=frame_axes))
    return {"spec_err": spec_err, "mel_err": mel_err, "welch_err": welch_err}
