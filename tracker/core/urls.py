"""URLs as they may be shown: a password in a URL is never printed (``redact_url``).

Every message, banner and log line that names a database or bucket URL
passes it through :func:`redact_url` first.
"""

from __future__ import annotations

import re
from typing import Any

#: The schemes of the team database (a store given as one of these is the team store).
DATABASE_SCHEMES = ("postgresql://", "postgres://")
REDACTED = "***"

# scheme://user:password@rest  ->  scheme://user:***@rest  (the password may hold ':' and '/', not '@'
# of the host part: the last '@' before the path ends the credentials, as libpq and urllib read it).
_CREDENTIALS = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^:@/?#]*):(?P<pw>[^/?#]*(?:/[^@]*)?)@")
_QUERY_PASSWORD = re.compile(r"(?i)([?&](?:password|pass|pwd|secret|token)=)[^&#]*")


def redact_url(url: Any) -> str:
    """``url`` with any password replaced by ``***``: in ``user:password@`` and in ``?password=``.

    Anything that is not a string is shown as ``str(url)``, redacted the same way.

    >>> redact_url("postgresql://lab:s3cret@db.example/runs")
    'postgresql://lab:***@db.example/runs'
    """
    text = str(url)
    m = _CREDENTIALS.match(text)
    if m is not None and "@" in text[m.end() - 1:]:
        text = f"{m.group('scheme')}{m.group('user')}:{REDACTED}@{text[m.end():]}"
    return _QUERY_PASSWORD.sub(lambda q: q.group(1) + REDACTED, text)


def url_password(url: Any) -> str | None:
    """The password written in ``url`` (``user:password@``), else ``None`` (to scrub it from a message)."""
    m = _CREDENTIALS.match(str(url))
    return m.group("pw") or None if m is not None else None


def is_database_url(text: Any) -> bool:
    """Whether ``text`` names the team database (``postgresql://`` or ``postgres://``) rather than a folder."""
    return isinstance(text, str) and text.startswith(DATABASE_SCHEMES)


__all__ = ["DATABASE_SCHEMES", "REDACTED", "is_database_url", "redact_url", "url_password"]
