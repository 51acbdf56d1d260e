"""``tracker schemas``: the fields, types, validators and descriptions of every schema."""

from __future__ import annotations

import contextlib
import inspect
import re
import textwrap
import typing
from typing import Any

import attrs
import click

from tracker.cli import CliContext
from tracker.cli.options import format_option, handle_errors, require_schema
from tracker.cli.render import csv_text, dumps, table_text, terminal_width
from tracker.cli.terminal import style, use_color

#: What holds for every field of every schema (the store's value encoding).
VALUE_RULES = ("ints are kept exactly within ±2**53; NaN and infinities are data in float fields; "
               "no silent coercion (an int is fine for a float, nothing else)")


def type_name(tp: Any) -> str:
    """A field type as text: ``float``, ``list[float] | None``, ``Literal['a', 'b']``."""
    if tp is type(None) or tp is None:
        return "None"
    if tp is Any:
        return "any JSON value"
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Union or type(tp).__name__ == "UnionType":
        return " | ".join(type_name(a) for a in args)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin is not None and args:
        name = getattr(origin, "__name__", str(origin).replace("typing.", ""))
        return f"{name}[{', '.join(type_name(a) for a in args)}]"
    if isinstance(tp, type):
        return tp.__name__
    return str(tp).replace("typing.", "")


def _expected_in_source(fn: Any) -> str | None:
    """The ``expected ...`` phrase of the first error a validator function raises, if it has one."""
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        return None
    names = dict(getattr(fn, "__globals__", {}))
    code, cells = getattr(fn, "__code__", None), getattr(fn, "__closure__", None) or ()
    if code is not None:
        for name, c in zip(code.co_freevars, cells, strict=False):
            with contextlib.suppress(ValueError):
                names[name] = c.cell_contents

    def placeholder(m: re.Match[str]) -> str:
        # Only names of constants are looked up (never evaluated): ``{MAX_BITS}``, and
        # ``{', '.join(NAMES)}`` or ``{', '.join(map(repr, NAMES))}`` over a tuple of strings.
        expr = m.group(1).strip()
        value = names.get(expr)
        if type(value) in (int, float, str):
            return str(value)
        joined = re.fullmatch(r"""(['"])(.*?)\1\.join\((?:map\((repr|str), )?(\w+)\)?\)""", expr)
        if joined:
            values = names.get(joined.group(4))
            if isinstance(values, (tuple, list)) and all(isinstance(v, str) for v in values):
                show = repr if joined.group(3) == "repr" else str
                return joined.group(2).join(show(v) for v in values)
        return "…"

    source = re.sub(r"\{([^{}]*)\}", placeholder, source)
    m = re.search(r"""(["'])expected ((?:(?!\1).)*)\1""", source)
    found = m.group(2).split(", given")[0].strip() if m else ""
    return found or None


def describe_validator(validator: Any) -> list[str]:
    """Human text for an attrs validator (a function, a built-in validator, or several)."""
    if validator is None:
        return []
    inner = getattr(validator, "_validators", None) or getattr(validator, "validators", None)
    if isinstance(inner, (list, tuple)):
        return [text for v in inner for text in describe_validator(v)]
    if inspect.isfunction(validator) or inspect.ismethod(validator):
        doc = inspect.getdoc(validator)
        if doc:
            return [doc.splitlines()[0].rstrip(".")]
        found = _expected_in_source(validator)
        if found:
            return [found]
        return [validator.__name__.strip("_").replace("_", " ")]
    return [_describe_attrs_validator(validator)]


def _describe_attrs_validator(v: Any) -> str:
    """One of attrs' own validators, from its attributes (their reprs nest ``<...>``)."""
    if hasattr(v, "compare_op") and hasattr(v, "bound"):
        return f"value {v.compare_op} {v.bound!r}"
    if hasattr(v, "options"):
        return f"one of {getattr(v, '_original_options', v.options)!r}"
    if hasattr(v, "member_validator"):
        return "each item: " + "; ".join(describe_validator(v.member_validator))
    if hasattr(v, "value_validator") and hasattr(v, "key_validator"):
        return ("keys: " + "; ".join(describe_validator(v.key_validator)) + ", values: "
                + "; ".join(describe_validator(v.value_validator)))
    if type(v).__name__ == "_OptionalValidator":
        return "; ".join(describe_validator(v.validator)) + " (or None)"
    if type(v).__name__ == "_NotValidator":
        return "not: " + "; ".join(describe_validator(v.validator))
    if hasattr(v, "type") and type(v).__name__ == "_InstanceOfValidator":
        types = v.type if isinstance(v.type, tuple) else (v.type,)
        return "instance of " + " or ".join(type_name(t) for t in types)
    if hasattr(v, "min_length"):
        return f"length >= {v.min_length}"
    if hasattr(v, "max_length"):
        return f"length <= {v.max_length}"
    if hasattr(v, "pattern"):
        return f"matches {getattr(v.pattern, 'pattern', v.pattern)!r}"
    text = repr(v)
    return text[1:-1] if text.startswith("<") and text.endswith(">") else text


def _doc_fields(cls: type) -> dict[str, str]:
    """``:ivar name: text`` and ``:param name: text`` entries of a class docstring."""
    doc = inspect.getdoc(cls) or ""
    out: dict[str, str] = {}
    current = None
    for line in doc.splitlines():
        m = re.match(r"\s*:(?:ivar|param|var|cvar)\s+(?:[\w\[\], |.]+\s+)?(\w+):\s*(.*)", line)
        if m:
            current = m.group(1)
            out[current] = m.group(2).strip()
        elif current and line.startswith((" ", "\t")) and line.strip():
            out[current] += " " + line.strip()
        else:
            current = None
    return out


def _default_of(field: attrs.Attribute) -> tuple[bool, Any]:
    default = field.default
    if default is attrs.NOTHING:
        return True, None
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        if default.takes_self:
            return False, "computed"
        try:
            return False, default.factory()
        except Exception:  # noqa: BLE001 - only shown; a factory that needs context is named instead
            return False, getattr(default.factory, "__name__", "factory") + "()"
    return False, default


def describe_schema(compiled: Any, owner: str | None) -> dict[str, Any]:
    """A schema as plain data: name, plugin, version, description and its fields.

    Each field has its type, whether it is required, its default, the
    constraints its validators check and its description (from the field's
    ``metadata["description"]`` or the class docstring's ``:ivar:`` lines).
    """
    schema = compiled.schema
    cls = schema.cls
    paragraphs = [" ".join(p.split()).replace("``", "") for p in (inspect.getdoc(cls) or "").split("\n\n")
                  if p.strip() and not p.lstrip().startswith(":")]
    doc: dict[str, Any] = {"name": schema.name, "plugin": owner, "version": schema.version,
                           "description": schema.description or (paragraphs[0] if paragraphs else ""),
                           "details": paragraphs, "free_form": schema.free_form,
                           "class": f"{cls.__module__}.{cls.__qualname__}", "fields": []}
    if schema.free_form:
        doc["fields"].append({
            "name": "<metric name>", "type": "float | int | bool", "required": False, "default": None,
            "constraints": ["any non-empty name except 'step' and 'time'"],
            "description": "one value per metric name, as many names as the record holds"})
        return doc
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # noqa: BLE001 - unresolvable annotations are shown as written
        hints = {}
    described = _doc_fields(cls)
    for f in attrs.fields(cls):
        required, default = _default_of(f)
        tp = hints.get(f.name, f.type)
        constraints = describe_validator(f.validator)
        meta = f.metadata or {}
        text = meta.get("description") or meta.get("help") or meta.get("doc") or described.get(f.name, "")
        doc["fields"].append({"name": f.name, "type": type_name(tp), "required": required, "default": default,
                              "constraints": constraints, "description": str(text).replace("``", "")})
    return doc


@click.command("schemas")
@click.argument("name", required=False)
@format_option()
@click.pass_obj
@handle_errors
def schemas_cmd(obj: CliContext, name: str | None, fmt: str) -> None:
    """List record schemas, or show one: fields with types, defaults, constraints and descriptions.

    \b
    Examples:
      tracker schemas
      tracker schemas fft.params
      tracker schemas ptq.layer --format json
    """
    host = obj.host
    if name is not None:
        doc = describe_schema(require_schema(host, name), host.schema_owner.get(name))
        doc["summarizers"] = [{"name": s.name, "description": s.description} for s in host.summarizers_for(name)]
        _print_schema(doc, fmt)
        return
    docs = [describe_schema(c, host.schema_owner.get(n)) for n, c in sorted(host.schemas.items())]
    if fmt == "json":
        click.echo(dumps(docs))
        return
    rows = [{"name": d["name"], "plugin": d["plugin"], "version": d["version"],
             "fields": "(free-form)" if d["free_form"] else ", ".join(f["name"] for f in d["fields"]),
             "description": d["description"]} for d in docs]
    columns = ["name", "plugin", "version", "fields", "description"]
    if fmt == "csv":
        click.echo(csv_text(columns, rows), nl=False)
    else:
        click.echo(table_text(columns, rows, color=use_color()) if rows else "(no schemas)")


def _print_schema(doc: dict[str, Any], fmt: str) -> None:
    if fmt == "json":
        click.echo(dumps(doc))
        return
    rows = [{"field": f["name"], "type": f["type"], "default": "required" if f["required"] else repr(f["default"]),
             "constraints": "; ".join(f["constraints"]), "description": f["description"]} for f in doc["fields"]]
    columns = ["field", "type", "default", "constraints", "description"]
    if fmt == "csv":
        click.echo(csv_text(columns, rows), nl=False)
        return
    click.echo(style(doc["name"], bold=True) + style(f"  (plugin {doc['plugin']}, version {doc['version']})",
                                                     dim=True))
    if doc["description"]:
        click.echo(doc["description"])
    for paragraph in doc["details"]:
        if paragraph != doc["description"]:
            click.echo()
            click.echo(textwrap.fill(paragraph, width=min(terminal_width() or 100, 100)))
    click.echo()
    click.echo(table_text(columns, rows, color=use_color()))
    click.echo(style(f"  {VALUE_RULES}", dim=True))
    if doc.get("summarizers"):
        click.echo()
        click.echo("summarizers:")
        for s in doc["summarizers"]:
            click.echo(f"  {s['name']}" + (f"  {s['description']}" if s["description"] else ""))


__all__ = ["describe_schema", "describe_validator", "schemas_cmd", "type_name"]
