"""The record classes of the five ``fft.*`` schemas.

The core checks field types before it builds a record, so the validators here
only check ranges and shapes; a ``ValueError`` they raise becomes a
``tracker.SchemaError`` naming the schema, the field, what was expected and
what was given. Step and time belong to the event, not to these classes.
"""

# No ``from __future__ import annotations``: the core reads these annotations
# as types.
import math

import attrs

__all__ = ["FFTHeatmap", "FFTLandscape", "FFTLossPoint", "FFTParams", "FFTTrace"]

_COUNT_FIELDS = (
    "twiddles",
    "gates",
    "freq_mask",
    "denoiser",
    "unitary",
    "mel_filters",
    "q8_packed",
)


def _power_of_two(instance: object, attribute: attrs.Attribute, value: int) -> None:
    if value < 2 or value & (value - 1):
        raise ValueError(f"expected a power of two >= 2, given {value}")


def _non_negative(instance: object, attribute: attrs.Attribute, value: int) -> None:
    if value < 0:
        raise ValueError(f"expected an int >= 0, given {value}")


def _positive(instance: object, attribute: attrs.Attribute, value: int) -> None:
    if value < 1:
        raise ValueError(f"expected an int >= 1, given {value}")


def _error_value(instance: object, attribute: attrs.Attribute, value: float) -> None:
    # NaN is data (a diverged model), a negative error is a bug in the caller.
    if value < 0:
        raise ValueError(f"expected an error >= 0 (or NaN), given {value!r}")


def _unit_or_nan(instance: object, attribute: attrs.Attribute, value: float) -> None:
    if not (math.isnan(value) or 0.0 <= value <= 1.0):
        raise ValueError(f"expected a value in [0, 1] (or NaN), given {value!r}")


def _first_bad(values: list[float], ok) -> tuple[int, float] | None:
    for i, v in enumerate(values):
        if not ok(v):
            return i, v
    return None


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
    mel_err: float = attrs.field(validator=_error_value)
    spec_err: float = attrs.field(validator=_error_value)
    welch_err: float = attrs.field(validator=_error_value)
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
    n_fft: int = attrs.field(validator=_power_of_two)
    twiddles: int = attrs.field(validator=_non_negative)
    gates: int = attrs.field(validator=_non_negative)
    freq_mask: int = attrs.field(validator=_non_negative)
    denoiser: int = attrs.field(validator=_non_negative)
    unitary: int = attrs.field(validator=_non_negative)
    mel_filters: int = attrs.field(validator=_non_negative)
    q8_packed: int = attrs.field(validator=_non_negative)
    total_params: int | None = None
    memory_bytes: int | None = None

    def __attrs_post_init__(self) -> None:
        total = sum(getattr(self, name) for name in _COUNT_FIELDS)
        if self.total_params is not None and self.total_params != total:
            raise ValueError(
                f"total_params: expected the sum of the counts = {total}, "
                f"given {self.total_params}"
            )
        if self.memory_bytes is not None and self.memory_bytes != 4 * total:
            raise ValueError(
                f"memory_bytes: expected 4 * total_params = {4 * total}, "
                f"given {self.memory_bytes}"
            )
        object.__setattr__(self, "total_params", total)
        object.__setattr__(self, "memory_bytes", 4 * total)


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
    stages: int = attrs.field(validator=_positive)
    butterflies: int = attrs.field(validator=_positive)
    gates: list[float]
    freq_mask: list[float] | None = None
    twiddle_mag: list[float] | None = None

    def __attrs_post_init__(self) -> None:
        size = self.stages * self.butterflies
        if len(self.gates) != size:
            raise ValueError(
                f"gates: expected stages*butterflies = {size} values, given {len(self.gates)}"
            )
        bad = _first_bad(self.gates, lambda v: 0.0 <= v <= 1.0)
        if bad is not None:
            raise ValueError(f"gates: expected values in [0, 1], given {bad[1]!r} at {bad[0]}")
        if self.twiddle_mag is not None:
            if len(self.twiddle_mag) != size:
                raise ValueError(
                    f"twiddle_mag: expected stages*butterflies = {size} values, "
                    f"given {len(self.twiddle_mag)}"
                )
            bad = _first_bad(self.twiddle_mag, lambda v: 0.0 <= v < math.inf)
            if bad is not None:
                raise ValueError(
                    f"twiddle_mag: expected finite values >= 0, given {bad[1]!r} at {bad[0]}"
                )
        if self.freq_mask is not None:
            bad = _first_bad(self.freq_mask, math.isfinite)
            if bad is not None:
                raise ValueError(
                    f"freq_mask: expected finite values, given {bad[1]!r} at {bad[0]}"
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
    x: list[float]
    y: list[float]
    z: list[list[float]]

    def __attrs_post_init__(self) -> None:
        for name in ("x", "y"):
            axis = getattr(self, name)
            if not axis:
                raise ValueError(f"{name}: expected at least one value, given an empty list")
            bad = _first_bad(axis, math.isfinite)
            if bad is not None:
                raise ValueError(f"{name}: expected finite values, given {bad[1]!r} at {bad[0]}")
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
    n_fft: int = attrs.field(validator=_power_of_two)
    batch: int = attrs.field(validator=_positive)
    train_steps: int = attrs.field(validator=_non_negative)
    final_mel_err: float = attrs.field(validator=_error_value)
    final_spec_err: float = attrs.field(validator=_error_value)
