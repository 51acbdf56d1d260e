"""The record classes of the five ``fft.*`` schemas.

The core checks field types before it builds a record, so the validators here
(from :mod:`tracker.validators`) only check ranges and shapes; a ``ValueError``
they raise becomes a ``tracker.SchemaError`` naming the schema, the field,
what was expected and what was given. Step and time belong to the event, not
to these classes.
"""

# No ``from __future__ import annotations``: the core reads these annotations
# as types.
from typing import Any

import attrs

from tracker import Schema
from tracker import validators as v

from .butterfly import BYTES_PER_PARAM

__all__ = ["SCHEMAS", "FFTHeatmap", "FFTLandscape", "FFTLossPoint", "FFTParams", "FFTTrace"]

_COUNT_FIELDS = (
    "twiddles",
    "gates",
    "freq_mask",
    "denoiser",
    "unitary",
    "mel_filters",
    "q8_packed",
)

def _count() -> Any:
    """A field holding a parameter count: an int >= 0."""
    return attrs.field(validator=v.non_negative)


#: An error is >= 0; NaN is data (a diverged model), a negative error a bug in the caller.
_error = v.at_least(0, nan_ok=True)
#: Gates live in [0, 1]; a model without gates reports NaN.
_unit_or_nan = v.in_range(0, 1, nan_ok=True)


@attrs.frozen(kw_only=True)
class FFTLossPoint:
    """One evaluation of one model during training (schema ``fft.loss_point``).

    :ivar model_id: which model of the study; "" when there is only one.
    :ivar total_loss: the training objective; NaN is kept as data.
    :ivar mel_err: error of the mel-band powers (>= 0 or NaN).
    :ivar spec_err: error of the complex spectrum (>= 0 or NaN).
    :ivar welch_err: error of the Welch-averaged power spectrum (>= 0 or NaN).
    :ivar mean_gate: mean of the model's gates, in [0, 1] (NaN when it has none).
    """

    model_id: str = ""
    total_loss: float
    mel_err: float = attrs.field(validator=_error)
    spec_err: float = attrs.field(validator=_error)
    welch_err: float = attrs.field(validator=_error)
    mean_gate: float = attrs.field(validator=_unit_or_nan)


@attrs.frozen(kw_only=True)
class FFTParams:
    """Parameter breakdown of one model (schema ``fft.params``).

    Every count is a number of 32-bit values; ``q8_packed`` counts 32-bit
    words that each hold four int8 values. ``total_params`` is the sum of the
    counts and ``memory_bytes`` is ``4 * total_params``; both are derived, and
    a given value that disagrees is an error.

    :ivar model_id: which model of the study.
    :ivar variant: the kind of model, e.g. "exact", "butterfly", "unitary", "int8", "learned".
    :ivar n_fft: transform size.
    :ivar twiddles: twiddle parameters (re and im of each free twiddle).
    :ivar gates: gate parameters, one per gated butterfly.
    :ivar freq_mask: frequency-mask parameters.
    :ivar denoiser: denoiser parameters.
    :ivar unitary: parameters of unitary butterflies (e.g. one angle each).
    :ivar mel_filters: mel filterbank weights.
    :ivar q8_packed: 32-bit words of packed int8 values.
    :ivar total_params: the sum of the counts (derived).
    :ivar memory_bytes: 4 * total_params (derived).
    """

    model_id: str
    variant: str
    n_fft: int = attrs.field(validator=v.power_of_two)
    twiddles: int = _count()
    gates: int = _count()
    freq_mask: int = _count()
    denoiser: int = _count()
    unitary: int = _count()
    mel_filters: int = _count()
    q8_packed: int = _count()
    total_params: int | None = None
    memory_bytes: int | None = None

    def __attrs_post_init__(self) -> None:
        total = sum(getattr(self, name) for name in _COUNT_FIELDS)
        if self.total_params is not None and self.total_params != total:
            raise ValueError(
                f"total_params: expected the sum of the counts = {total}, "
                f"given {self.total_params}"
            )
        memory = BYTES_PER_PARAM * total
        if self.memory_bytes is not None and self.memory_bytes != memory:
            raise ValueError(
                f"memory_bytes: expected {BYTES_PER_PARAM} * total_params = {memory}, "
                f"given {self.memory_bytes}"
            )
        object.__setattr__(self, "total_params", total)
        object.__setattr__(self, "memory_bytes", memory)


@attrs.frozen(kw_only=True)
class FFTHeatmap:
    """Gate activations of one model, stage x butterfly (schema ``fft.heatmap``).

    ``gates`` is flat and row-major: stage ``s``, butterfly ``b`` at
    ``s * butterflies + b``. ``twiddle_mag`` (same layout) holds the magnitude
    of each butterfly's twiddle; ``freq_mask`` the model's frequency-mask values.

    :ivar model_id: which model of the study.
    :ivar stages: number of butterfly stages (rows).
    :ivar butterflies: butterflies per stage (columns).
    :ivar gates: stages*butterflies gates in [0, 1], row-major.
    :ivar freq_mask: optional frequency-mask values (finite).
    :ivar twiddle_mag: optional twiddle magnitudes (>= 0), stages*butterflies of them, row-major.
    """

    model_id: str
    stages: int = attrs.field(validator=v.positive)
    butterflies: int = attrs.field(validator=v.positive)
    gates: list[float] = attrs.field(validator=v.each(v.fraction))
    freq_mask: list[float] | None = attrs.field(
        default=None, validator=attrs.validators.optional(v.each(v.finite)))
    twiddle_mag: list[float] | None = attrs.field(
        default=None, validator=attrs.validators.optional(v.each(v.finite, v.non_negative)))

    def __attrs_post_init__(self) -> None:
        size = self.stages * self.butterflies
        if len(self.gates) != size:
            raise ValueError(
                f"gates: expected stages*butterflies = {size} values, given {len(self.gates)}"
            )
        if self.twiddle_mag is not None:
            if len(self.twiddle_mag) != size:
                raise ValueError(
                    f"twiddle_mag: expected stages*butterflies = {size} values, "
                    f"given {len(self.twiddle_mag)}"
                )


@attrs.frozen(kw_only=True)
class FFTLandscape:
    """A loss surface over two parameters (schema ``fft.landscape``).

    ``z[i][j]`` is the loss at ``(x[j], y[i])``: ``len(y)`` rows of ``len(x)``
    values. ``x`` and ``y`` are finite; ``z`` may hold NaN or Inf where the
    loss diverged.

    :ivar model_id: which model of the study.
    :ivar x_label: what the x axis varies.
    :ivar y_label: what the y axis varies.
    :ivar x: the x grid values (at least one, finite).
    :ivar y: the y grid values (at least one, finite).
    :ivar z: the loss, len(y) rows of len(x) values.
    """

    model_id: str
    x_label: str
    y_label: str
    x: list[float] = attrs.field(validator=[v.non_empty, v.each(v.finite)])
    y: list[float] = attrs.field(validator=[v.non_empty, v.each(v.finite)])
    z: list[list[float]]

    def __attrs_post_init__(self) -> None:
        if len(self.z) != len(self.y):
            raise ValueError(
                f"z: expected len(y) = {len(self.y)} rows, given {len(self.z)} rows"
            )
        for i, row in enumerate(self.z):
            if len(row) != len(self.x):
                raise ValueError(
                    f"z: expected rows of len(x) = {len(self.x)} values, "
                    f"given {len(row)} in row {i}"
                )


@attrs.frozen(kw_only=True)
class FFTTrace:
    """How one model was trained and where it ended (schema ``fft.trace``).

    :ivar model_id: which model of the study.
    :ivar variant: the kind of model.
    :ivar n_fft: transform size.
    :ivar batch: examples per training step.
    :ivar train_steps: optimizer steps taken (0 for a model that is not trained).
    :ivar final_mel_err: mel-band error at the end (>= 0 or NaN).
    :ivar final_spec_err: spectral error at the end (>= 0 or NaN).
    """

    model_id: str
    variant: str
    n_fft: int = attrs.field(validator=v.power_of_two)
    batch: int = attrs.field(validator=v.positive)
    train_steps: int = attrs.field(validator=v.non_negative)
    final_mel_err: float = attrs.field(validator=_error)
    final_spec_err: float = attrs.field(validator=_error)


#: The five ``fft.*`` schemas, in the order ``tracker schemas`` lists them.
SCHEMAS = [
    Schema("fft.loss_point", FFTLossPoint,
           description="one evaluation of a model: total loss, mel/spectral/Welch errors"),
    Schema("fft.params", FFTParams,
           description="parameter counts of a model; total and memory are derived"),
    Schema("fft.heatmap", FFTHeatmap,
           description="gates (and twiddle magnitudes) per stage x butterfly"),
    Schema("fft.landscape", FFTLandscape,
           description="loss over a grid of two parameters"),
    Schema("fft.trace", FFTTrace,
           description="how a model was trained and its final errors"),
]
