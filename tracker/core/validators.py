"""Field validators for plugin record classes, worded like the core's own checks.

Each name here is an attrs validator (a callable ``(instance, attribute,
value)``) or builds one::

    import attrs
    from tracker import validators as v

    @attrs.frozen(kw_only=True)
    class LayerStats:
        name: str = attrs.field(validator=v.non_empty)
        bits: int = attrs.field(validator=v.in_range(2, 16))
        mse: float = attrs.field(validator=v.non_negative)
        share: float = attrs.field(validator=v.fraction)
        mode: str = attrs.field(validator=v.one_of("symmetric", "asymmetric"))

The first line of each validator's docstring is the constraint ``tracker
schemas`` shows for the field (``value >= 0``, ``one of 'a', 'b'``).

The core checks a field's type before any validator runs, so these check only
ranges, shapes and choices. A failure raises ``ValueError("expected ...,
given ...")``; the core turns it into a :class:`tracker.SchemaError` naming
the schema and the field. NaN fails every bound unless the validator is made
with ``nan_ok=True`` (a diverged loss is data, a negative error is a bug).
Several validators on one field go in a list: ``attrs.field(validator=[v.finite,
v.positive])``.
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "Validator",
    "at_least",
    "at_most",
    "each",
    "finite",
    "fraction",
    "greater_than",
    "in_range",
    "length",
    "non_empty",
    "non_negative",
    "not_nan",
    "one_of",
    "positive",
    "power_of_two",
]

#: What attrs calls: ``validator(instance, attribute, value)``, raising on a bad value.
Validator = Callable[[Any, Any, Any], None]

_repr = reprlib.Repr()
_repr.maxstring = 40
_repr.maxlist = 8
_repr.maxother = 40


def _given(value: Any) -> str:
    return _repr.repr(value)


def _a(value: Any) -> str:
    """"an int" or "a number", after the value the field was given (its type is already checked)."""
    return "an int" if isinstance(value, int) and not isinstance(value, bool) else "a number"


# The rich comparison codes of Python's C API (Py_LE, Py_GT, Py_GE), for ``check.bounds``.
_LE, _GT, _GE = 1, 4, 5


def _bound(test: Callable[[Any], bool], text: str, nan_ok: bool, bounds: tuple) -> Validator:
    or_nan = " (or NaN)" if nan_ok else ""

    def check(_instance: Any, _attribute: Any, value: Any) -> None:
        if nan_ok and value != value:  # NaN is the only value unequal to itself
            return
        if not test(value):  # a comparison with NaN is false, so NaN fails here
            raise ValueError(f"expected {_a(value)} {text}{or_nan}, given {_given(value)}")

    check.__doc__ = f"value {text}{or_nan}."
    check.__qualname__ = check.__name__ = f"value {text}"
    # ``(low comparison, low, high comparison, high, nan_ok)``: the same test as comparisons, which
    # log_record's C fast path (tracker/write/_fastline.c) makes without calling ``check``; a value
    # that fails them goes to ``check``, which names the problem.
    check.bounds = (*bounds, nan_ok)  # type: ignore[attr-defined]
    return check


def at_least(low: float, *, nan_ok: bool = False) -> Validator:
    """A validator of ``value >= low``.

    :param nan_ok: let NaN through (it is data, e.g. a diverged loss).
    """
    return _bound(lambda x: x >= low, f">= {low:g}", nan_ok, (_GE, low, None, None))


def at_most(high: float, *, nan_ok: bool = False) -> Validator:
    """A validator of ``value <= high``.

    :param nan_ok: let NaN through.
    """
    return _bound(lambda x: x <= high, f"<= {high:g}", nan_ok, (None, None, _LE, high))


def greater_than(low: float, *, nan_ok: bool = False) -> Validator:
    """A validator of ``value > low``.

    :param nan_ok: let NaN through.
    """
    return _bound(lambda x: x > low, f"> {low:g}", nan_ok, (_GT, low, None, None))


def in_range(low: float, high: float, *, nan_ok: bool = False) -> Validator:
    """A validator of ``low <= value <= high`` (both ends included).

    :param nan_ok: let NaN through.
    """
    return _bound(lambda x: low <= x <= high, f"in [{low:g}, {high:g}]", nan_ok, (_GE, low, _LE, high))


#: ``value >= 0``; NaN fails.
non_negative = at_least(0)
#: ``value > 0``; NaN fails.
positive = greater_than(0)
#: ``0 <= value <= 1``; NaN fails.
fraction = in_range(0, 1)


def finite(_instance: Any, _attribute: Any, value: float) -> None:
    """a finite number (not NaN, +Inf or -Inf)."""
    if not math.isfinite(value):
        raise ValueError(f"expected a finite number, given {_given(value)}")


def not_nan(_instance: Any, _attribute: Any, value: float) -> None:
    """any number but NaN (infinities allowed)."""
    if value != value:
        raise ValueError(f"expected a number other than NaN (infinities allowed), given {_given(value)}")


def power_of_two(_instance: Any, _attribute: Any, value: int) -> None:
    """a power of two >= 2."""
    if value < 2 or value & (value - 1):
        raise ValueError(f"expected a power of two >= 2, given {_given(value)}")


def non_empty(_instance: Any, _attribute: Any, value: Sequence[Any]) -> None:
    """non-empty (a string or list with at least one item)."""
    if len(value) == 0:
        raise ValueError(f"expected a non-empty {'string' if isinstance(value, str) else 'list'}, "
                         f"given {_given(value)}")


def one_of(*choices: Any) -> Validator:
    """A validator of ``value in choices``; the message lists the choices."""
    if not choices:
        raise ValueError("one_of: expected at least one choice, given none")
    allowed = ", ".join(repr(c) for c in choices)

    def check(_instance: Any, _attribute: Any, value: Any) -> None:
        if value not in choices:
            raise ValueError(f"expected one of {allowed}, given {_given(value)}")

    check.__doc__ = f"one of {allowed}."
    check.__qualname__ = check.__name__ = f"one of {allowed}"
    return check


def length(n: int) -> Validator:
    """A validator of ``len(value) == n``."""
    def check(_instance: Any, _attribute: Any, value: Sequence[Any]) -> None:
        if len(value) != n:
            raise ValueError(f"expected {n} item{'s' if n != 1 else ''}, "
                             f"given {len(value)}: {_given(value)}")

    check.__doc__ = f"exactly {n} items."
    check.__qualname__ = check.__name__ = f"length {n}"
    return check


def each(*validators: Validator) -> Validator:
    """A validator that runs ``validators`` on every item of a list; the message names the item."""
    if not validators:
        raise ValueError("each: expected at least one validator, given none")

    def check(instance: Any, attribute: Any, value: Sequence[Any]) -> None:
        for i, item in enumerate(value):
            for validator in validators:
                try:
                    validator(instance, attribute, item)
                except ValueError as err:
                    raise ValueError(f"item {i}: {err}") from None

    names = ", ".join(getattr(x, "__name__", "valid") for x in validators)
    texts = "; ".join((x.__doc__ or getattr(x, "__name__", "valid")).splitlines()[0].rstrip(".")
                      for x in validators)
    check.__doc__ = f"each item: {texts}."
    check.__qualname__ = check.__name__ = f"each {names}"
    return check
