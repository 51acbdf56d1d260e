"""Values: strict type checks with no silent coercion, and the store's encoding of non-finite floats.

A checker returns the value normalized (numpy scalars and 0-d arrays as the
Python numbers they hold, numpy arrays in list fields as lists) or raises
``_Bad`` saying what was expected. NaN, +Inf and -Inf are written to the
store as the strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"`` in numeric
positions; ints are limited to ``±2**53`` so that every JSON reader (jq,
pandas, DuckDB) reads them exactly (see docs/format.md).
"""

from __future__ import annotations

import math
import reprlib
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union

from .errors import SchemaError

MAX_INT = 2**53
RESERVED = frozenset({"step", "time"})
SPECIAL_IN: dict[str, float] = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}

_repr = reprlib.Repr()
_repr.maxstring = 40
_repr.maxother = 40


def given(value: Any) -> str:
    """Describe a value for an error message: its type and a short repr."""
    return f"{type(value).__name__} {_repr.repr(value)}"


class _Bad(Exception):
    """Internal: a value failed a type check; ``args[0]`` says what was expected."""


# --- numbers -------------------------------------------------------------------------------

# numpy dtype kinds whose values are plain Python values (bool, int, float, str,
# objects checked one by one); datetime64 and timedelta64 (kinds M and m) are
# not: their ``item()`` and ``tolist()`` give bare ints for some units.
_PLAIN_KINDS = "biufUO"


def _unwrap_numpy(v: Any) -> Any:
    """A numpy number (bool, int or float scalar, or 0-d array) as the Python value it holds.

    Anything else is returned unchanged, so it is refused: a datetime64 or
    timedelta64 would otherwise pass as the int its ``item()`` gives.
    """
    if type(v).__module__ == "numpy" and getattr(v, "ndim", None) == 0 and v.dtype.kind in "biuf":
        return v.item()
    return v


def _check_float(v: Any) -> float:
    t = type(v)
    if t is float:
        return v
    if t is int:
        if -MAX_INT <= v <= MAX_INT:
            return float(v)
        raise _Bad(f"a float (ints within ±2**53 are kept exactly, {v} is not)")
    u = _unwrap_numpy(v)
    if u is not v and type(u) in (float, int):
        return _check_float(u)
    raise _Bad("a float")


def _check_int(v: Any) -> int:
    t = type(v)
    if t is int:
        if -MAX_INT <= v <= MAX_INT:
            return v
        raise _Bad("an int within ±2**53 (larger ints are not kept exactly by JSON readers)")
    u = _unwrap_numpy(v)
    if u is not v and type(u) is int:
        return _check_int(u)
    raise _Bad("an int")


def _check_bool(v: Any) -> bool:
    if type(v) is bool:
        return v
    u = _unwrap_numpy(v)
    if u is not v and type(u) is bool:
        return u
    raise _Bad("a bool")


def _check_str(v: Any) -> str:
    if type(v) is str:
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            raise _Bad("a str encodable as UTF-8 (no lone surrogates)") from None
        return v
    raise _Bad("a str")


def _check_json(v: Any) -> Any:
    """Any JSON value: None, bool, int, float, str, lists and str-keyed maps of them."""
    t = type(v)
    if v is None or t is bool or t is float:
        return v
    if t is int:
        return _check_int(v)
    if t is str:
        return _check_str(v)
    if t is list or t is tuple:
        return [_check_json(x) for x in v]
    if isinstance(v, Mapping):
        out = {}
        for k, x in v.items():
            if type(k) is not str:
                raise _Bad(f"str keys (key {given(k)})")
            out[_check_str(k)] = _check_json(x)
        return out
    if type(v).__module__ == "numpy" and getattr(getattr(v, "dtype", None), "kind", "") in _PLAIN_KINDS:
        return _check_json(v.tolist())
    raise _Bad("a JSON value (None, bool, int, float, str, list or dict)")


def _list_checker(inner: Callable[[Any], Any], desc: str) -> Callable[[Any], list]:
    def check(v: Any) -> list:
        if type(v) is not list and type(v) is not tuple:
            if type(v).__module__ == "numpy" and getattr(v, "ndim", 0) >= 1 and v.dtype.kind in _PLAIN_KINDS:
                v = v.tolist()
            else:
                raise _Bad(f"a list of {desc}")
        out = []
        for i, x in enumerate(v):
            try:
                out.append(inner(x))
            except _Bad as bad:
                raise _Bad(f"a list of {desc} (item {i}: expected {bad.args[0]}, given {given(x)})") from None
        return out

    return check


def _describe(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def compile_type(tp: Any) -> Callable[[Any], Any]:
    """A checker for a field type: returns the normalized value or raises ``_Bad``."""
    if tp is float:
        return _check_float
    if tp is int:
        return _check_int
    if tp is bool:
        return _check_bool
    if tp is str:
        return _check_str
    if tp is Any or tp is object:
        return _check_json
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        checks = [compile_type(a) for a in options]
        allow_none = len(options) < len(args)
        desc = " or ".join(_describe(a) for a in args)

        def check_union(v: Any) -> Any:
            if v is None and allow_none:
                return None
            for c in checks:
                try:
                    return c(v)
                except _Bad:
                    pass
            raise _Bad(desc)

        return check_union
    if origin in (list, tuple, typing.get_origin(typing.Sequence[int])):
        inner_tp = args[0] if args else Any
        return _list_checker(compile_type(inner_tp), _describe(inner_tp))
    if origin is dict:
        val = compile_type(args[1] if len(args) == 2 else Any)

        def check_dict(v: Any) -> dict:
            if not isinstance(v, Mapping):
                raise _Bad("a mapping")
            out = {}
            for k, x in v.items():
                if type(k) is not str:
                    raise _Bad(f"str keys (key {given(k)})")
                out[k] = val(x)
            return out

        return check_dict
    if origin is Literal:
        allowed = args

        def check_literal(v: Any) -> Any:
            if type(v) in (str, int, bool) and v in allowed:
                return v
            raise _Bad("one of " + ", ".join(repr(a) for a in allowed))

        return check_literal
    raise TypeError(f"unsupported field type {tp!r}")


# --- non-finite floats ---------------------------------------------------------------------

def _special(v: float) -> str:
    return "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")


def encode_nonfinite(obj: Any) -> Any:
    """A copy of ``obj`` with NaN and infinities replaced by their store strings."""
    t = type(obj)
    if t is float:
        return obj if obj - obj == 0.0 else _special(obj)
    if t is dict:
        return {k: encode_nonfinite(v) for k, v in obj.items()}
    if t is list or t is tuple:
        return [encode_nonfinite(v) for v in obj]
    return obj


def decode_nonfinite(obj: Any) -> Any:
    """Undo :func:`encode_nonfinite` wherever a special string stands."""
    t = type(obj)
    if t is str:
        return SPECIAL_IN.get(obj, obj)
    if t is dict:
        return {k: decode_nonfinite(v) for k, v in obj.items()}
    if t is list:
        return [decode_nonfinite(v) for v in obj]
    return obj


def _has_float(tp: Any) -> bool:
    if tp is float or tp is Any or tp is object:
        return True
    return any(_has_float(a) for a in typing.get_args(tp))


def _has_str(tp: Any) -> bool:
    if tp is str or tp is Any or tp is object or type(tp) is str:
        return True
    return any(_has_str(a) for a in typing.get_args(tp))


def _holds_special(v: Any) -> bool:
    t = type(v)
    if t is str:
        return v in SPECIAL_IN
    if t is list:
        return any(_holds_special(x) for x in v)
    if t is dict:
        return any(_holds_special(x) for x in v.values())
    return False


def _without_special_strings(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``check``, refusing the strings that stand for NaN and infinities in the store.

    For a field that holds floats and strings alike (``Any``, ``float | str``),
    readers restore those strings as floats, so a string "NaN" could not be
    read back as it was given.
    """

    def check_no_special(v: Any) -> Any:
        out = check(v)
        if _holds_special(out):
            raise _Bad("no str 'NaN', 'Infinity' or '-Infinity' where a float may stand "
                       "(the store writes non-finite floats so)")
        return out

    return check_no_special


# --- metrics ----------------------------------------------------------------------------------

def check_metrics(values: Any, schema: str = "metrics") -> dict[str, Any]:
    """Validate a free-form ``{name: number}`` record; returns it with plain Python numbers.

    :raises SchemaError: naming every bad key or value.
    """
    if type(values) is not dict:
        if not isinstance(values, Mapping):
            raise SchemaError(schema, [("(record)", f"expected a mapping of name to number, given {given(values)}")])
        values = dict(values)
    out = values
    for k, v in values.items():
        t = type(v)
        if t is float or t is bool or (t is int and -MAX_INT <= v <= MAX_INT):
            if type(k) is str and k not in RESERVED and k:
                continue
        # Slow path: something to normalize or to refuse.
        return _check_metrics_slow(values, schema)
    return out


def _check_metrics_slow(values: Mapping, schema: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    problems: list[tuple[str, str]] = []
    for k, v in values.items():
        if type(k) is not str:
            problems.append((repr(k), f"expected a str metric name, given {given(k)}"))
            continue
        if not k:
            problems.append(("''", "expected a non-empty metric name, given ''"))
            continue
        if k in RESERVED:
            problems.append((k, f"expected a metric name other than {sorted(RESERVED)} (reserved), given {k!r}"))
            continue
        try:
            _check_str(k)
            out[k] = _check_metric_value(v)
        except _Bad as bad:
            problems.append((k, f"expected {bad.args[0]}, given {given(v)}"))
    if problems:
        raise SchemaError(schema, problems)
    return out


def _check_metric_value(v: Any) -> float | int | bool:
    t = type(v)
    if t is bool or t is float:
        return v
    if t is int:
        return _check_int(v)
    u = _unwrap_numpy(v)
    if u is not v and type(u) in (bool, float, int):
        return _check_metric_value(u)
    raise _Bad("a number (float, int within ±2**53 or bool)")
