"""The rules for the words a user names things with: tags and names, and config keys.

One function per rule, called wherever such a word enters (``start_run``,
``init``, ``tracker tag``, ``tracker rename``, ``run.config.update``), so a
tag refused by ``tracker tag --add`` is refused by ``start_run(tags=...)``
too, with the same message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracker.core.errors import SchemaError, TrackerError
from tracker.core.values import BadValue, check_json, given

#: The longest tag or name accepted.
MAX_LABEL = 1000


def plain_text(value: Any, what: str) -> str:
    """``value`` as a plain ``str`` storable as JSON (no lone surrogates).

    :raises TrackerError: naming ``what`` and what was given.
    """
    if not isinstance(value, str):
        raise TrackerError(f"{what}: expected a str, given {given(value)}")
    try:
        check_json(str.__str__(value))
    except BadValue as bad:
        raise TrackerError(f"{what}: expected {bad.args[0]}, given {given(value)}") from None
    return str.__str__(value)


def check_label(value: Any, what: str) -> str:
    """A tag or a name: one line of text, not blank, at most :data:`MAX_LABEL` characters.

    :raises TrackerError: naming what was wrong.
    """
    text = plain_text(value, what)
    if "\n" in text or "\r" in text:
        raise TrackerError(f"{what} {text!r}: must be one line, it holds a line break")
    if not text.strip():
        raise TrackerError(f"{what}: must not be empty, given {text!r}")
    if len(text) > MAX_LABEL:
        raise TrackerError(f"{what}: at most {MAX_LABEL} characters, given {len(text)}")
    return text


def check_keys(values: Mapping[str, Any], what: str = "config") -> None:
    """Refuse a key that is empty or only blanks, at any depth of ``values`` (nested dicts and lists).

    Such a key can name no column (``tracker query``'s ``runs`` view, a
    dataframe's ``config.KEY``) and no field of the dashboard.

    :raises SchemaError: of ``what``, naming where the key is.
    """
    stack: list[tuple[str, Any]] = [("", values)]
    while stack:
        where, v = stack.pop()
        if isinstance(v, Mapping):
            for k, x in v.items():
                if isinstance(k, str) and not k.strip():
                    place = f"{where}.{k!r}" if where else repr(k)
                    raise SchemaError(what, [(place, f"expected a key that is not blank, given the key {k!r}")])
                stack.append((f"{where}.{k}" if where else str(k), x))
        elif isinstance(v, (list, tuple)):
            stack.extend((f"{where}[{i}]", x) for i, x in enumerate(v))


__all__ = ["MAX_LABEL", "check_keys", "check_label", "plain_text"]
