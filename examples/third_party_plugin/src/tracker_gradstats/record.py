"""The ``grad.norm`` record and the helper that makes one from a gradient array."""

from __future__ import annotations

import attrs
import numpy as np

from tracker import validators as v


@attrs.frozen(kw_only=True)
class GradNorm:
    """Statistics of one layer's gradient at one step."""

    layer: str
    norm: float = attrs.field(validator=v.non_negative)
    max_abs: float = attrs.field(validator=v.non_negative)
    zero_fraction: float = attrs.field(validator=v.fraction)


def grad_record(layer: str, grad: np.ndarray) -> GradNorm:
    """L2 norm, largest magnitude and share of exact zeros of ``grad``."""
    g = np.asarray(grad, dtype=np.float64).ravel()
    if g.size == 0:
        return GradNorm(layer=layer, norm=0.0, max_abs=0.0, zero_fraction=0.0)
    return GradNorm(layer=layer, norm=float(np.linalg.norm(g)), max_abs=float(np.abs(g).max()),
                    zero_fraction=float(np.count_nonzero(g == 0) / g.size))
