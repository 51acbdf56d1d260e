"""Values: strict type checks with no silent coercion.

A checker returns the value normalized (numpy scalars and 0-d arrays as the
Python numbers they hold, numpy arrays in list fields as lists) or raises
``BadValue`` saying what was expected. Ints are limited to ``±2**53`` so that every JSON reader (jq,
pandas, DuckDB) reads them exactly (see docs/format.md).
"""

from __future__ import annotations

import reprlib
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union

from tracker.core.errors import SchemaError
from tracker.core.format import METRICS, SPECIAL_IN

MAX_INT = 2**53
RESERVED = frozenset({"step", "time"})

_repr = reprlib.Repr()
_repr.maxstring = 40
_repr.maxother = 40


def given(value: Any) -> str:
    """Describe a value for an error message: its type and a short repr."""
    return f"{type(value).__name__} {_repr.repr(value)}"


class BadValue(Exception):
    """A value failed a type check; ``args[0]`` says what was expected (callers turn it into a SchemaError).

    :ivar path: keys and list indexes from the checked value down to the bad one (``()``: the value itself).
    :ivar value: the bad value itself, once :meth:`at` was called.
    """

    path: tuple[str | int, ...] = ()
    value: Any = None

    def at(self, key: str | int, value: Any) -> BadValue:
        """Prefix ``key`` to the path; ``value`` is the bad one when this is the innermost container."""
        if not self.path:
            self.value = value
        self.path = (key, *self.path)
        return self

    def where(self) -> str:
        """The path as text: ``optim.betas[1]``."""
        out = ""
        for k in self.path:
            out += f"[{k}]" if isinstance(k, int) else (f".{k}" if out else str(k))
        return out


# --- numbers -------------------------------------------------------------------------------

# numpy dtype kinds whose values are plain Python values (bool, int, float, str,
# objects checked one by one); datetime64 and timedelta64 (kinds M and m) are
# not: their ``item()`` and ``tolist()`` give bare ints for some units.
_PLAIN_KINDS = "biufUO"


def unwrap_numpy(v: Any) -> Any:
    """A numpy number (bool, int or float scalar, or 0-d array) or a 0-d tensor as the Python value it holds.

    A tensor of torch, JAX or TensorFlow counts when it has ``ndim == 0`` and
    an ``item()`` giving a bool, int or float (a training loop's loss).
    Anything else is returned unchanged, so it is refused: a datetime64 or
    timedelta64 would otherwise pass as the int its ``item()`` gives.
    """
    t = type(v)
    if t.__module__ == "numpy":
        if getattr(v, "ndim", None) == 0 and v.dtype.kind in "biuf":
            return v.item()
        return v
    if t in _PLAIN_TYPES or t.__module__ == "builtins":
        return v
    return _tensor_item(v)


_PLAIN_TYPES = frozenset({float, int, bool, str, list, tuple, dict})


def _tensor_item(v: Any) -> Any:
    """The number a 0-d tensor holds (``ndim == 0`` and ``item()``), else ``v`` itself."""
    try:
        if getattr(v, "ndim", None) != 0:
            return v
        item = v.item
    except Exception:  # noqa: BLE001 - an odd object's attribute may raise anything: not a tensor
        return v
    if not callable(item):
        return v
    try:
        out = item()
    except Exception:  # noqa: BLE001 - e.g. a tensor on a device that cannot be read: refused as given
        return v
    return out if type(out) in (bool, int, float) else v


def _check_float(v: Any) -> float:
    t = type(v)
    if t is float:
        return v
    if t is int:
        if -MAX_INT <= v <= MAX_INT:
            return float(v)
        raise BadValue(f"a float (ints within ±2**53 are kept exactly, {v} is not)")
    u = unwrap_numpy(v)
    if u is not v and type(u) in (float, int):
        return _check_float(u)
    raise BadValue("a float")


def _check_int(v: Any) -> int:
    t = type(v)
    if t is int:
        if -MAX_INT <= v <= MAX_INT:
            return v
        raise BadValue("an int within ±2**53 (larger ints are not kept exactly by JSON readers)")
    u = unwrap_numpy(v)
    if u is not v and type(u) is int:
        return _check_int(u)
    raise BadValue("an int")


def _check_bool(v: Any) -> bool:
    if type(v) is bool:
        return v
    u = unwrap_numpy(v)
    if u is not v and type(u) is bool:
        return u
    raise BadValue("a bool")


def _check_str(v: Any) -> str:
    if type(v) is str:
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            raise BadValue("a str encodable as UTF-8 (no lone surrogates)") from None
        return v
    raise BadValue("a str")


def check_json(v: Any) -> Any:
    """Any JSON value: None, bool, int, float, str, lists and str-keyed maps of them."""
    t = type(v)
    if v is None or t is bool or t is float:
        return v
    if t is int:
        return _check_int(v)
    if t is str:
        return _check_str(v)
    if t is list or t is tuple:
        out_list = []
        for i, x in enumerate(v):
            try:
                out_list.append(check_json(x))
            except BadValue as bad:
                raise bad.at(i, x) from None
        return out_list
    if isinstance(v, Mapping):
        out = {}
        for k, x in v.items():
            if type(k) is not str:
                raise BadValue(f"str keys (key {given(k)})")
            try:
                out[_check_str(k)] = check_json(x)
            except BadValue as bad:
                raise bad.at(k, x) from None
        return out
    if type(v).__module__ == "numpy" and getattr(getattr(v, "dtype", None), "kind", "") in _PLAIN_KINDS:
        return check_json(v.tolist())
    u = _tensor_item(v)
    if u is not v:
        return check_json(u)
    items = array_items(v)
    if items is not None:
        return check_json(items)
    raise BadValue("a JSON value (None, bool, int, float, str, list or dict)")


def array_items(v: Any) -> list | None:
    """An array-like of one or more dimensions as nested lists, as W&B stores them; ``None`` for anything else.

    A torch, JAX or TensorFlow tensor, a numpy array or a pandas Series: what
    has a ``shape`` of at least one dimension and gives its values through
    ``tolist()`` (``numpy()`` or ``__array__`` when it has no ``tolist``).
    Dates and other values that are not JSON stay refused by the caller.
    """
    try:
        if not len(v.shape):  # no shape, or a 0-d value (the caller's number checks take those)
            return None
        for how in ("tolist", "numpy", "__array__"):
            fn = getattr(v, how, None)
            if callable(fn):
                out = fn()
                if how != "tolist":
                    out = out.tolist() if callable(getattr(out, "tolist", None)) else None
                return out if type(out) is list else None
    except Exception:  # noqa: BLE001 - an odd object's attributes may raise anything: not an array
        return None
    return None


def _list_checker(inner: Callable[[Any], Any], desc: str) -> Callable[[Any], list]:
    def check(v: Any) -> list:
        if type(v) is not list and type(v) is not tuple:
            if type(v).__module__ == "numpy" and getattr(v, "ndim", 0) >= 1 and v.dtype.kind in _PLAIN_KINDS:
                v = v.tolist()
            else:
                raise BadValue(f"a list of {desc}")
        out = []
        for i, x in enumerate(v):
            try:
                out.append(inner(x))
            except BadValue as bad:
                raise BadValue(f"a list of {desc} (item {i}: expected {bad.args[0]}, given {given(x)})") from None
        return out

    return check


def _describe(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp).replace("typing.", "")


def compile_type(tp: Any) -> Callable[[Any], Any]:
    """A checker for a field type: returns the normalized value or raises ``BadValue``."""
    if tp is float:
        return _check_float
    if tp is int:
        return _check_int
    if tp is bool:
        return _check_bool
    if tp is str:
        return _check_str
    if tp is Any or tp is object:
        return check_json
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
                except BadValue:
                    pass
            raise BadValue(desc)

        return check_union
    if origin in (list, tuple, typing.get_origin(typing.Sequence[int])):
        inner_tp = args[0] if args else Any
        return _list_checker(compile_type(inner_tp), _describe(inner_tp))
    if origin is dict:
        val = compile_type(args[1] if len(args) == 2 else Any)

        def check_dict(v: Any) -> dict:
            if not isinstance(v, Mapping):
                raise BadValue("a mapping")
            out = {}
            for k, x in v.items():
                if type(k) is not str:
                    raise BadValue(f"str keys (key {given(k)})")
                out[k] = val(x)
            return out

        return check_dict
    if origin is Literal:
        allowed = args

        def check_literal(v: Any) -> Any:
            if type(v) in (str, int, bool) and v in allowed:
                return v
            raise BadValue("one of " + ", ".join(repr(a) for a in allowed))

        return check_literal
    raise TypeError(f"unsupported field type {tp!r}")


def has_float(tp: Any) -> bool:
    if tp is float or tp is Any or tp is object:
        return True
    return any(has_float(a) for a in typing.get_args(tp))


def has_str(tp: Any) -> bool:
    if tp is str or tp is Any or tp is object or type(tp) is str:
        return True
    return any(has_str(a) for a in typing.get_args(tp))


def holds_special(v: Any) -> bool:
    """Whether ``v`` (a JSON value) holds a string that readers would take for a non-finite float."""
    t = type(v)
    if t is str:
        return v in SPECIAL_IN
    if t is list:
        return any(holds_special(x) for x in v)
    if t is dict:
        return any(holds_special(x) for x in v.values())
    return False


def without_special_strings(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``check``, refusing the strings that stand for NaN and infinities in the store.

    For a field that holds floats and strings alike (``Any``, ``float | str``),
    readers restore those strings as floats, so a string "NaN" could not be
    read back as it was given.
    """

    def check_no_special(v: Any) -> Any:
        out = check(v)
        if holds_special(out):
            raise BadValue("no str 'NaN', 'Infinity' or '-Infinity' where a float may stand "
                       "(the store writes non-finite floats so)")
        return out

    return check_no_special


# --- text the tracker records on its own ------------------------------------------------------

def storable_text(text: str) -> str:
    """``text`` with what UTF-8 cannot encode escaped, so that it can always be stored.

    Bytes that arrived undecodable (``sys.argv``, ``os.getcwd()``,
    ``os.listdir()`` and host names hold them as surrogate escapes) become
    ``\\xe9``; other lone surrogates become ``\\ud800``. Everything else is
    kept as it is.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(_escape(c) if "\ud800" <= c <= "\udfff" else c for c in text)
    return text


def _escape(c: str) -> str:
    code = ord(c)
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def storable(value: Any) -> Any:
    """``value`` (str, lists and dicts of them, other JSON values) with every str made :func:`storable_text`."""
    t = type(value)
    if t is str:
        return storable_text(value)
    if t is list or t is tuple:
        return [storable(x) for x in value]
    if t is dict:
        return {storable_text(str(k)): storable(x) for k, x in value.items()}
    return value


# --- metrics ----------------------------------------------------------------------------------

def check_metrics(values: Any, schema: str = METRICS) -> dict[str, Any]:
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
        except BadValue as bad:
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
    u = unwrap_numpy(v)
    if u is not v and type(u) in (bool, float, int):
        return _check_metric_value(u)
    raise BadValue("a number (float, int within ±2**53 or bool)")


# --- config -----------------------------------------------------------------------------------

def plain_config(value: Any, what: str = "config") -> dict[str, Any]:
    """A run's config as plain JSON data: the form W&B and Lightning scripts give it in.

    A dict, an argparse ``Namespace``, a dataclass instance or an OmegaConf
    ``DictConfig`` (interpolations resolved), nested in any mix with lists,
    tuples and ``ListConfig``; numbers may be numpy scalars or 0-d tensors.

    :raises SchemaError: naming the dotted key of the first value that is none
        of these (a ``Path``, an ``Enum``, a ``set``, an arbitrary object),
        with what was expected and what was given.
    """
    top = config_container(value)
    if not isinstance(top, Mapping):
        raise SchemaError(what, [("(value)", "expected a dict, an argparse Namespace, a dataclass or an "
                                             f"OmegaConf DictConfig, given {given(value)}")])
    out = _plain_value(top, "", what)
    return out


def config_container(value: Any) -> Any:
    """``value`` as a Mapping or list when it is a config container (Namespace, dataclass, OmegaConf)."""
    import dataclasses
    from argparse import Namespace

    module = type(value).__module__
    if module.startswith("omegaconf"):
        try:
            from omegaconf import OmegaConf

            return OmegaConf.to_container(value, resolve=True)
        except Exception as exc:  # noqa: BLE001 - a missing value or a failed interpolation: named below
            raise SchemaError("config", [("(value)", f"an OmegaConf config that resolves, given one that "
                                                     f"fails: {type(exc).__name__}: {exc}")]) from None
    if isinstance(value, Namespace):
        return vars(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    return value


def _plain_value(value: Any, path: str, what: str) -> Any:
    value = config_container(value)
    if isinstance(value, Mapping):
        out = {}
        for k, x in value.items():
            if type(k) is not str:
                raise SchemaError(what, [(path or "(key)", f"expected str keys, given {given(k)}")])
            out[k] = _plain_value(x, f"{path}.{k}" if path else k, what)
        return out
    if isinstance(value, (list, tuple)):  # torch.Size and named tuples too
        return [_plain_value(x, f"{path}[{i}]", what) for i, x in enumerate(value)]
    try:
        return check_json(value)
    except BadValue as bad:
        raise SchemaError(what, [(path or "(value)", f"expected {bad.args[0]}, given {given(value)}")]) from None
