"""Activation ranges collected over calibration batches, for static INT8 activations."""

from __future__ import annotations

import numpy as np

from .quantize import MIN_SCALE, QMAX


class Calibrator:
    """Collects the running min and max of named tensors (usually activations).

    Feed it a few representative batches with :meth:`observe`, then read the
    ranges, the symmetric INT8 scales derived from them, or quantise a tensor
    with its calibrated scale (:meth:`fake_quantize`) to measure what INT8
    activations cost.
    """

    def __init__(self) -> None:
        self._min: dict[str, float] = {}
        self._max: dict[str, float] = {}
        self._count: dict[str, int] = {}

    def observe(self, name: str, values: np.ndarray) -> None:
        """Widen ``name``'s range to cover ``values``.

        :raises ValueError: for non-finite values (they would make the range useless).
        """
        v = np.asarray(values, dtype=np.float64)
        if v.size == 0:
            return
        if not np.all(np.isfinite(v)):
            raise ValueError(f"{name}: expected finite values, given NaN or Inf")
        lo, hi = float(v.min()), float(v.max())
        self._min[name] = min(lo, self._min.get(name, lo))
        self._max[name] = max(hi, self._max.get(name, hi))
        self._count[name] = self._count.get(name, 0) + int(v.size)

    @property
    def names(self) -> list[str]:
        """Names observed so far, in order of first observation."""
        return list(self._min)

    def __len__(self) -> int:
        return len(self._min)

    def __contains__(self, name: object) -> bool:
        return name in self._min

    def range(self, name: str) -> tuple[float, float]:
        """``(min, max)`` seen for ``name``.

        :raises KeyError: when ``name`` was never observed.
        """
        if name not in self._min:
            raise KeyError(f"{name!r} was never observed; observed: {self.names}")
        return self._min[name], self._max[name]

    def ranges(self) -> dict[str, tuple[float, float]]:
        """Every observed range."""
        return {name: self.range(name) for name in self._min}

    def count(self, name: str) -> int:
        """Number of values observed for ``name``."""
        self.range(name)
        return self._count[name]

    def scale(self, name: str) -> float:
        """Symmetric INT8 scale: ``max(|min|, |max|) / 127``, floored like weight scales."""
        lo, hi = self.range(name)
        return max(max(abs(lo), abs(hi)) / QMAX, MIN_SCALE)

    def scales(self) -> dict[str, float]:
        """The scale of every observed name."""
        return {name: self.scale(name) for name in self._min}

    def fake_quantize(self, name: str, values: np.ndarray) -> np.ndarray:
        """``values`` quantised to INT8 with ``name``'s scale and read back (clipping outliers)."""
        s = self.scale(name)
        return np.clip(np.rint(np.asarray(values, dtype=np.float64) / s), -QMAX, QMAX) * s

    def reset(self) -> None:
        """Forget every range."""
        self._min.clear()
        self._max.clear()
        self._count.clear()
