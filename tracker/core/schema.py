"""Schemas: strict validation of records, and their structuring back from the store.

A record is checked in two stages. First each field is type-checked with no
silent coercion (an int is fine for a float, numpy scalars and 0-d arrays count
as the matching Python numbers, anything else of the wrong type is refused);
then the schema's attrs class is constructed, which runs its validators. When
construction fails, every field validator is run again one by one so that the
:class:`~tracker.SchemaError` lists every problem of the record at once.

The type checks and the store's encoding of values live in
:mod:`tracker.core.values`.
"""

from __future__ import annotations

import functools
import inspect
import operator
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import cattrs

from tracker.core.errors import SchemaError
from tracker.core.format import SPECIAL_IN, decode_nonfinite
from tracker.core.values import (
    MAX_INT,
    RESERVED,
    BadValue,
    check_metrics,
    compile_type,
    given,
    has_float,
    has_str,
    without_special_strings,
)


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
            if has_float(tp):
                floats.append(f.name)
                if has_str(tp):
                    check = without_special_strings(check)
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
            except BadValue as bad:
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
                except BadValue as bad:
                    raise SchemaError(self.name, [(name, f"expected {bad.args[0]} (derived), "
                                                         f"given {given(v)}")]) from None
            out[name] = v
        return out

    def _flat_validate(self, flat: tuple, values: dict[str, Any]) -> dict[str, Any] | None:
        """The fast path of :meth:`validate` for flat schemas, or ``None`` to take the full one.

        ``log_record`` of a flat schema must cost little more than writing its
        line (see benchmarks/RESULTS.md), and cattrs alone costs several times that.

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
                for i, attribute, check, _bounds in validators:
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
            # With the comparisons that stand for it, when it is one of tracker.validators' bounds.
            validators.append((i, f, f.validator, getattr(f.validator, "bounds", None)))
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


@functools.cache
def fn_takes_run(fn: Callable[..., Any]) -> bool:
    """Whether a summarizer function takes ``(table, run)`` rather than ``(table)``."""
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return False
    return len(params) >= 2


#: What the C fast path of ``log_record`` (tracker/write/_fastline.c) needs to check a flat record
#: as :meth:`CompiledSchema._flat_validate` does.
validators_disabled = _validators_disabled
NO_INSTANCE = _NO_INSTANCE
NeedsInstance = _NeedsInstance
