"""Schemas: strict validation of records and the value encoding of the store.

A record is checked in two stages. First each field is type-checked with no
silent coercion (an int is fine for a float, numpy scalars and 0-d arrays count
as the matching Python numbers, anything else of the wrong type is refused);
then the schema's attrs class is constructed, which runs its validators. When
construction fails, every field validator is run again one by one so that the
:class:`~tracker.SchemaError` lists every problem of the record at once.

Store encoding of values (see docs/format.md): strict JSON, with NaN, +Inf and
-Inf written as the strings ``"NaN"``, ``"Infinity"`` and ``"-Infinity"`` in
numeric positions, and ints limited to ``±2**53`` so that every JSON reader
(jq, pandas, DuckDB) reads them exactly.
"""

from __future__ import annotations

import inspect
import math
import operator
import reprlib
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, Literal, Union

import attrs
import cattrs

from .errors import SchemaError

MAX_INT = 2**53
RESERVED = frozenset({"step", "time"})
SPECIAL_IN: dict[str, float] = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}

_repr = reprlib.Repr()
_repr.maxstring = 40
_repr.maxother = 40


@attrs.frozen
class Schema:
    """A named record type offered by a plugin.

    :param name: dotted name owned by one plugin, e.g. ``"fft.loss_point"``.
    :param cls: an attrs class; records are validated by constructing it.
    :param version: bumped when the fields change incompatibly.
    :param description: one line shown by ``tracker schemas``.
    :param free_form: records are flat ``{name: number}`` maps (the built-in
        ``metrics`` schema); ``cls`` then takes them as its one ``values`` field.
    """

    name: str
    cls: type
    version: int = 1
    description: str = ""
    free_form: bool = attrs.field(default=False, kw_only=True)


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


# --- typed schemas ----------------------------------------------------------------------------

class CompiledSchema:
    """A schema ready for the logging path: per-field checkers built once."""

    def __init__(self, schema: Schema, converter: cattrs.Converter) -> None:
        self.schema = schema
        self.name = schema.name
        self.cls = schema.cls
        self.free_form = schema.free_form
        self._converter = converter
        self._flat: tuple | None = None
        if self.free_form:
            self.fields: list[tuple[str, Callable[[Any], Any], bool]] = []
            self.kinds: dict[str, str] = {}
            self._float_fields: tuple[str, ...] = ()
            self.names: frozenset[str] = frozenset()
            return
        if not attrs.has(schema.cls):
            raise TypeError(f"schema {schema.name!r}: cls must be an attrs class, given {schema.cls!r}")
        hints = typing.get_type_hints(schema.cls)
        fields = []
        kinds = {}
        floats = []
        for f in attrs.fields(schema.cls):
            if f.name in RESERVED:
                raise TypeError(f"schema {schema.name!r}: field name {f.name!r} is reserved")
            tp = hints.get(f.name, Any)
            check = compile_type(tp)
            if _has_float(tp):
                floats.append(f.name)
                if _has_str(tp):
                    check = _without_special_strings(check)
            fields.append((f.name, check, f.default is attrs.NOTHING))
            kinds[f.name] = {float: "f", int: "i", bool: "b"}.get(tp, "o")
        self.fields = fields
        self.kinds = kinds
        self._float_fields = tuple(floats)
        self.names = frozenset(n for n, _, _ in fields)
        self._flat = _compile_flat(schema.cls, hints)
        if self._flat is not None:
            names = self._flat[0]
            self._flat_fields = operator.attrgetter(*names) if len(names) > 1 else (
                lambda inst, _n=names[0]: (getattr(inst, _n),))

    def validate(self, data: Any) -> dict[str, Any]:
        """Check a mapping or an instance of the class; returns the fields to store.

        :raises SchemaError: listing every problem of the record.
        """
        flat = self._flat
        if flat is not None:
            if type(data) is dict:
                out = self._flat_validate(flat, data)
            elif type(data) is self.cls:
                # An instance: its validators ran when it was built, unless it was built
                # with them off or changed since; checking costs less than building another.
                out = self._flat_validate(flat, dict(zip(flat[0], self._flat_fields(data), strict=True)))
            else:
                out = None
            if out is not None:
                return out
        if self.free_form:
            if isinstance(data, self.cls):
                data = data.values
            return check_metrics(data, self.name)
        if isinstance(data, self.cls):
            values = {n: getattr(data, n) for n in self.names}
        elif isinstance(data, Mapping):
            values = data
        else:
            raise SchemaError(self.name, [("(record)", f"expected a mapping or a {self.cls.__name__}, "
                                                       f"given {given(data)}")])
        problems: list[tuple[str, str]] = []
        if len(values) > len(self.names) or not self.names.issuperset(values):
            for k in values:
                if k not in self.names:
                    problems.append((str(k), f"expected one of the fields {sorted(self.names)}, "
                                             f"given unknown field {k!r}"))
        kwargs = {}
        for name, check, required in self.fields:
            if name not in values:
                if required:
                    problems.append((name, "expected a value (required field), given nothing"))
                continue
            v = values[name]
            try:
                kwargs[name] = check(v)
            except _Bad as bad:
                problems.append((name, f"expected {bad.args[0]}, given {given(v)}"))
        if problems:
            raise SchemaError(self.name, problems)
        try:
            inst = self.cls(**kwargs)
        except Exception as exc:  # noqa: BLE001 - any validator error becomes a SchemaError
            raise SchemaError(self.name, self._diagnose(kwargs, exc)) from None
        out = {}
        for name, check, _ in self.fields:
            v = getattr(inst, name)
            if name not in kwargs or v is not kwargs[name]:
                try:
                    v = check(v)
                except _Bad as bad:
                    raise SchemaError(self.name, [(name, f"expected {bad.args[0]} (derived), "
                                                         f"given {given(v)}")]) from None
            out[name] = v
        return out

    def _flat_validate(self, flat: tuple, values: dict[str, Any]) -> dict[str, Any] | None:
        """The fast path of :meth:`validate` for flat schemas (issue 6), or ``None`` to take the full one.

        Exact types only (an int for a float field, numpy scalars and anything
        doubtful go the full way, which converts or names the problem), then
        the field validators, called as attrs calls them but without building
        the instance. Any failure returns ``None``: the full path finds the
        same failure and reports it with the usual message.
        """
        names, getter, types, defaults, ints, strs, validators = flat
        n = len(names)
        if len(values) != n:
            if len(values) > n or not defaults:
                return None
            values = {**defaults, **values}
            if len(values) != n:
                return None
        try:
            vals = getter(values)
        except KeyError:
            return None
        if tuple(map(type, vals)) != types:
            return None
        if ints:
            for i in ints:
                if not -MAX_INT <= vals[i] <= MAX_INT:
                    return None
        if strs:
            for i in strs:
                if not vals[i].isascii():
                    try:
                        vals[i].encode("utf-8")
                    except UnicodeEncodeError:
                        return None
        if validators:
            if _validators_disabled():
                return None
            try:
                for i, attribute, check in validators:
                    check(_NO_INSTANCE, attribute, vals[i])
            except _NeedsInstance:
                self._flat = None  # a validator reads other fields: always build the instance
                return None
            except Exception:  # noqa: BLE001 - the full path reports it
                return None
        # The fields in the class's order, as the full path returns them (a
        # copy only when the caller's order differs).
        return values if tuple(values) == names else dict(zip(names, vals, strict=False))

    def _diagnose(self, kwargs: dict[str, Any], exc: Exception) -> list[tuple[str, str]]:
        """Run each field validator on its own to name every failing field."""
        problems = []
        ns = types.SimpleNamespace(**kwargs)
        for f in attrs.fields(self.cls):
            if f.validator is None or f.name not in kwargs:
                continue
            try:
                f.validator(ns, f, kwargs[f.name])
            except Exception as e:  # noqa: BLE001 - reported, not raised
                problems.append((f.name, _message(e, kwargs[f.name])))
        if not problems:
            text = str(exc.args[0]) if exc.args else type(exc).__name__
            field, sep, rest = text.partition(":")
            if sep and field.strip() in self.names:
                problems.append((field.strip(), rest.strip()))
            else:
                problems.append(("(record)", text))
        return problems

    def decode(self, data: dict[str, Any]) -> dict[str, Any]:
        """Restore NaN and infinities in the float fields of stored data."""
        if self.free_form:
            return {k: (SPECIAL_IN[v] if type(v) is str else v) for k, v in data.items()}
        for name in self._float_fields:
            if name in data:
                data[name] = decode_nonfinite(data[name])
        return data

    def structure(self, data: dict[str, Any]) -> Any:
        """An instance of the schema's class from decoded stored data."""
        if self.free_form:
            return self.cls(values=data)
        try:
            return self._converter.structure(data, self.cls)
        except Exception as exc:  # noqa: BLE001 - shown to the user as a SchemaError
            msgs = cattrs.transform_error(exc) if isinstance(exc, cattrs.BaseValidationError) else [str(exc)]
            raise SchemaError(self.name, [("(stored record)", m) for m in msgs]) from None


_FLAT_TYPES = (float, int, str, bool)
_validators_disabled = attrs.validators.get_disabled


class _NeedsInstance(BaseException):
    """Raised by :data:`_NO_INSTANCE` when a validator looks at the instance.

    A ``BaseException``, so that a validator's own ``except Exception`` does
    not swallow it.
    """


class _NoInstanceType:
    """Stands for the instance when a flat schema's validators run without one."""

    __slots__ = ()

    def __getattribute__(self, name: str) -> Any:
        raise _NeedsInstance(name)


_NO_INSTANCE = _NoInstanceType()


def _compile_flat(cls: type, hints: dict[str, Any]) -> tuple | None:
    """What the fast path of a flat schema needs, or ``None`` when the schema is not flat.

    Flat: every field is a float, int, str or bool that ``__init__`` takes as
    it is (no converter, alias, factory, ``init=False``, pre- or post-init
    hook, hand-written ``__init__``), so that checking the types and running
    the field validators is all that building the instance would do.
    """
    init = getattr(cls, "__init__", None)
    code = getattr(init, "__code__", None)
    if code is None or "attrs generated" not in code.co_filename:
        return None
    if hasattr(cls, "__attrs_post_init__") or hasattr(cls, "__attrs_pre_init__"):
        return None
    names, types, defaults, ints, strs, validators = [], [], {}, [], [], []
    for i, f in enumerate(attrs.fields(cls)):
        tp = hints.get(f.name)
        if tp not in _FLAT_TYPES or not f.init or f.converter is not None or getattr(f, "alias", f.name) != f.name:
            return None
        if f.default is not attrs.NOTHING:
            if isinstance(f.default, attrs.Factory) or type(f.default) is not tp:  # type: ignore[arg-type]
                return None
            defaults[f.name] = f.default
        names.append(f.name)
        types.append(tp)
        if tp is int:
            ints.append(i)
        elif tp is str:
            strs.append(i)
        if f.validator is not None:
            validators.append((i, f, f.validator))
    if not names:
        return None
    getter = operator.itemgetter(*names) if len(names) > 1 else (lambda d, _n=names[0]: (d[_n],))
    return (tuple(names), getter, tuple(types), defaults, tuple(ints), tuple(strs), tuple(validators))


def _message(exc: Exception, value: Any) -> str:
    text = str(exc.args[0]) if exc.args else type(exc).__name__
    if "given" in text or "got" in text:
        return text
    return f"{text}; given {given(value)}"


def make_converter() -> cattrs.Converter:
    """A cattrs converter that structures stored data back into schema classes.

    Reading is lenient only where the store's encoding requires it: ints
    stored in float fields come back as floats.
    """
    conv = cattrs.Converter(forbid_extra_keys=False)
    conv.register_structure_hook(float, lambda v, _: float(v))
    conv.register_structure_hook(int, lambda v, _: v if type(v) is int else int(v))
    # bool subclasses int: without its own hook it would take the int one.
    conv.register_structure_hook(bool, lambda v, _: v if type(v) is bool else bool(v))
    return conv


def fn_takes_run(fn: Callable[..., Any]) -> bool:
    """Whether a summarizer function takes ``(table, run)`` rather than ``(table)``."""
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return False
    return len(params) >= 2
