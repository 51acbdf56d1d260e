"""Database and bucket URLs as text: the password taken out before a URL is shown, the team URL in force.

A URL is printed in banners, errors, logs and ``tracker sync --status``;
each of those shows ``redact_url(url)``, never the URL itself.
"""

from __future__ import annotations

import os
import re
from typing import Any

#: ``scheme://user:password@``: the password part of a URL's authority (up to its last ``@``, so that an
#: unescaped ``@`` in a password never leaves a part of it shown).
_USERINFO = re.compile(r"^(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:@/?#]*):(?P<secret>[^/?#]*(?:/[^@?#]*)?)@")
#: ``password=...`` in a query string (libpq takes it there too).
_QUERY_PASSWORD = re.compile(r"(?P<head>[?&](?:password|sslpassword|pass|pwd|secret|token)=)(?P<secret>[^&#]*)",
                             re.IGNORECASE)
#: The same inside longer text (a command line's ``--db=postgresql://lab:pw@host/runs``): a URL starts
#: where a scheme does not continue a word, and ends at white space.
_EMBEDDED_USERINFO = re.compile(r"(?<![A-Za-z0-9+.-])(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:@/?#\s]*)"
                                r":(?P<secret>[^/?#\s]*(?:/[^@?#\s]*)?)@")
MASK = "***"
REDACTED = MASK
#: The schemes of the team database (a store given as one of these is the team store).
DATABASE_SCHEMES = ("postgresql://", "postgres://")


def redact_url(url: Any) -> str:
    """``url`` with any password replaced by ``***``: in ``user:password@`` and in ``?password=``.

    A URL without a password comes back unchanged; so does text that is not a URL. Anything that
    is not a string is shown as ``str(url)``, redacted the same way.

    >>> redact_url("postgresql://lab:s3cret@db.example/runs")
    'postgresql://lab:***@db.example/runs'
    """
    url = str(url)
    out = _USERINFO.sub(lambda m: f"{m['head']}:{MASK}@" if m["secret"] else m[0], url, count=1)
    return _QUERY_PASSWORD.sub(lambda m: m["head"] + MASK if m["secret"] else m[0], out)


def redact_urls(value: Any) -> Any:
    """``value`` with the password of every URL inside it replaced by ``***``, before it is stored.

    Strings are searched for URLs anywhere in them (a command line's
    ``--db=postgresql://lab:s3cret@db/runs``, ``?password=...``); lists,
    tuples and dicts are walked (their keys kept); anything else comes back
    as it is. What holds no password comes back equal to what was given.

    >>> redact_urls(["train.py", "--db=postgresql://lab:s3cret@db.example/runs"])
    ['train.py', '--db=postgresql://lab:***@db.example/runs']
    """
    if isinstance(value, str):
        if "://" not in value and "=" not in value:
            return value
        out = _EMBEDDED_USERINFO.sub(lambda m: f"{m['head']}:{MASK}@" if m["secret"] else m[0], value)
        return _QUERY_PASSWORD.sub(lambda m: m["head"] + MASK if m["secret"] else m[0], out)
    if isinstance(value, dict):
        return {k: redact_urls(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_urls(v) for v in value]
    if isinstance(value, tuple):
        return tuple(redact_urls(v) for v in value)
    return value


def url_secrets(url: str) -> list[str]:
    """The passwords written in ``url`` (to take out of messages that may quote them)."""
    found = []
    m = _USERINFO.match(url) if isinstance(url, str) else None
    if m and m["secret"]:
        found.append(m["secret"])
    if isinstance(url, str):
        found.extend(q["secret"] for q in _QUERY_PASSWORD.finditer(url) if q["secret"])
    return found


def url_password(url: Any) -> str | None:
    """The password written in ``url`` (``user:password@``), else ``None`` (to scrub it from a message)."""
    m = _USERINFO.match(str(url))
    return (m["secret"] or None) if m is not None else None


def is_database_url(text: Any) -> bool:
    """Whether ``text`` names the team database (``postgresql://`` or ``postgres://``) rather than a folder."""
    return isinstance(text, str) and text.startswith(DATABASE_SCHEMES)


def team_url(config: Any) -> str | None:
    """Where runs stream to: ``[team] url``, else ``TRACKER_TEAM_URL``, else ``TRACKER_URL``, else ``None``.

    A ``postgresql://`` URL is the team database; an ``https://`` one is the lab's tracker server
    (:func:`team_database_url` is the former only).
    """
    url = getattr(config, "team_url", None)
    if url:
        return str(url)
    return os.environ.get("TRACKER_TEAM_URL") or os.environ.get("TRACKER_URL") or None


def team_database_url(config: Any) -> str | None:
    """The team database of :func:`team_url` (``None`` when runs stream to a tracker server or nowhere)."""
    url = team_url(config)
    return url if is_database_url(url) else None


__all__ = ["DATABASE_SCHEMES", "MASK", "REDACTED", "is_database_url", "redact_url", "redact_urls", "team_url",
           "team_database_url", "url_password", "url_secrets"]
