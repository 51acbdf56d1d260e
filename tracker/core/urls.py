"""URLs as they may be shown: the password of a database URL replaced by ``***``."""

from __future__ import annotations

import re

# scheme://user:PASSWORD@host... (the user part ends at the last "@" before the path, as urllib reads it)
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://[^:/?#@]*):[^/?#]*@")
# ...?password=PASSWORD (libpq also takes the password as a parameter)
_PARAM = re.compile(r"([?&](?:password|sslpassword)=)[^&#]*", re.IGNORECASE)


def redact_url(url: str) -> str:
    """``url`` with its password (in the user part or a ``password=`` parameter) replaced by ``***``.

    ``"postgresql://ana:s3cret@db.lab/exp"`` -> ``"postgresql://ana:***@db.lab/exp"``; anything
    without a password (a folder, a URL without one) comes back unchanged.
    """
    return _PARAM.sub(r"\1***", _USERINFO.sub(r"\1:***@", url))
