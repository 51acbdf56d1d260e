"""The rules for the words a user names things with: tags and names, and config keys.

One function per rule, called wherever such a word enters (``start_run``,
``init``, ``tracker tag``, ``tracker rename``, ``run.config.update``), so a
tag refused by ``tracker tag --add`` is refused by ``start_run(tags=...)``
too, with the same message.
"""

from __future__ import annotations

import re
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


# --- artifacts: names, types, aliases (DESIGN.md, "Artifacts: versions, aliases, lineage") -------------

#: The longest artifact name and type accepted.
MAX_ARTIFACT_NAME = 256
#: What an alias may be made of: a word a path, a URL and a shell leave alone.
ALIAS_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")
#: Version names (``v0``, ``v12``): never an alias.
VERSION_RE = re.compile(r"v[0-9]+")
#: The alias every name has, naming its newest version; never set by hand.
LATEST = "latest"


def check_artifact_name(value: Any, what: str = "artifact name") -> str:
    """An artifact name: one line, no ``:`` (it separates the version), no ``\\``, not a path that
    leaves its folder (no ``/`` at either end, no ``.`` or ``..`` part), no control characters.

    A ``/`` inside is kept (``eval/report.txt``, as ``save`` names files): the name is data, never a path.

    :raises TrackerError: one line naming the name and what is wrong with it.
    """
    text = check_label(value, what)
    if len(text) > MAX_ARTIFACT_NAME:
        raise TrackerError(f"{what} {text[:40]!r}...: at most {MAX_ARTIFACT_NAME} characters, given {len(text)}")
    bad = next((c for c in text if ord(c) < 32 or ord(c) == 127), None)
    if bad is not None:
        raise TrackerError(f"{what} {text!r}: holds the control character {bad!r}")
    if ":" in text:
        raise TrackerError(f"{what} {text!r}: must not hold ':' (it separates a name from its version, "
                           "as in 'mnist-cnn:v3')")
    if "\\" in text:
        raise TrackerError(f"{what} {text!r}: must not hold a backslash")
    parts = text.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise TrackerError(f"{what} {text!r}: must not be a path (no leading or trailing '/', no '.' or '..' "
                           "part); names are data, never paths")
    if text != text.strip():
        raise TrackerError(f"{what} {text!r}: must not start or end with a blank")
    return text


def check_artifact_type(value: Any) -> str:
    """An artifact type (``model``, ``dataset``...): one line of at most 128 characters, no ``:``.

    :raises TrackerError: naming what is wrong.
    """
    text = check_label(value, "artifact type")
    if len(text) > 128 or ":" in text or text != text.strip():
        raise TrackerError(f"artifact type {text[:40]!r}: expected one word or phrase of at most 128 characters, "
                           "without ':' or blanks at either end")
    return text


def check_alias(value: Any) -> str:
    """An alias set by hand or at log time: ``[A-Za-z0-9_.-]{1,64}``, not ``latest``, not ``v<digits>``.

    :raises TrackerError: one line naming the alias and the rule it breaks.
    """
    if not isinstance(value, str):
        raise TrackerError(f"alias: expected a str, given {given(value)}")
    if value == LATEST:
        raise TrackerError("alias 'latest' is set automatically (it names the newest version) and cannot be "
                           "set or removed by hand")
    if VERSION_RE.fullmatch(value):
        raise TrackerError(f"alias {value!r} looks like a version number; versions are named v0, v1, ... "
                           "by the order they were logged, so an alias may not be one")
    if not ALIAS_RE.fullmatch(value):
        raise TrackerError(f"alias {value!r}: expected 1 to 64 of the characters A-Z a-z 0-9 _ . -")
    return value


def check_aliases(values: Any) -> list[str]:
    """A list of aliases (a single str is one alias), each checked by :func:`check_alias`, duplicates dropped."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, (list, tuple, set, frozenset)):
        raise TrackerError(f"aliases: expected a list of str, given {given(values)}")
    return list(dict.fromkeys(check_alias(v) for v in values))


__all__ = ["ALIAS_RE", "LATEST", "MAX_ARTIFACT_NAME", "MAX_LABEL", "VERSION_RE", "check_alias", "check_aliases",
           "check_artifact_name", "check_artifact_type", "check_keys", "check_label", "plain_text"]
