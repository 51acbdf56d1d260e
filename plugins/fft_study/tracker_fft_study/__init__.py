"""FFT study plugin for ``tracker``: schemas, numpy helpers, summaries and an HTML report.

The helpers and record classes here need only numpy and attrs; the hook
implementations live in :mod:`tracker_fft_study.plugin`, which ``tracker``
loads through the ``tracker`` entry-point group.
"""

from .butterfly import (
    BYTES_PER_PARAM,
    bit_reverse_permutation,
    butterfly_apply,
    butterfly_backward,
    exact_twiddles,
    learned_model_params,
    num_stages,
    twiddle_param_count,
)
from .heatmap import gate_heatmap
from .record import FFTHeatmap, FFTLandscape, FFTLossPoint, FFTParams, FFTTrace
from .spectral import mel_filterbank, spectral_errors

__version__ = "0.1.0"

__all__ = [
    "BYTES_PER_PARAM",
    "FFTHeatmap",
    "FFTLandscape",
    "FFTLossPoint",
    "FFTParams",
    "FFTTrace",
    "bit_reverse_permutation",
    "butterfly_apply",
    "butterfly_backward",
    "exact_twiddles",
    "gate_heatmap",
    "learned_model_params",
    "mel_filterbank",
    "num_stages",
    "spectral_errors",
    "twiddle_param_count",
]
