"""HTML pages: text or an .html file, stored as UTF-8 bytes, shown only in a sandboxed frame.

With ``inject`` (W&B's default), a ``<base target="_blank">`` and a small
stylesheet (system font, a margin) are put at the start of the page's
``<head>`` (one is made when the page has none), as W&B injects its own
stylesheet; nothing that loads from the network, so the page looks the same
in an offline report. The dashboard never shows a page in its own origin.
"""

from __future__ import annotations

import os
import re
from typing import Any

import attrs

from tracker.capture.mediafile import Payload, bad, file_payload
from tracker.core.values import given

HTML = "html"
HTML_FILES = {".html": "html", ".htm": "html"}
INJECTED = ('<base target="_blank"><style>body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;'
            "margin:8px}</style>")
_HEAD = re.compile(rb"<head(\s[^>]*)?>", re.I)
_HTML = re.compile(rb"<html(\s[^>]*)?>", re.I)


@attrs.frozen
class Page:
    """A checked page: its bytes (``size`` of them)."""

    payload: Payload

    def fields(self) -> dict[str, Any]:
        """``size``."""
        return {"size": self.payload.size}


def inject(data: bytes) -> bytes:
    """``data`` with :data:`INJECTED` at the start of its head."""
    tag = INJECTED.encode()
    m = _HEAD.search(data)
    if m:
        return data[:m.end()] + tag + data[m.end():]
    m = _HTML.search(data)
    if m:
        return data[:m.end()] + b"<head>" + tag + b"</head>" + data[m.end():]
    return b"<head>" + tag + b"</head>" + data


def _text(data: bytes, where: str) -> bytes:
    nul = data.find(b"\0")
    if nul >= 0:
        raise bad(HTML, "data", f"expected HTML text, given {where} holding binary bytes (NUL at byte {nul})")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise bad(HTML, "data", f"expected UTF-8 HTML text, given {where} with a bad byte at {exc.start}") from None
    return data


def _looks_like_path(text: str) -> bool:
    return "<" not in text and "\n" not in text and text.strip().lower().endswith((".html", ".htm"))


def page(data: Any, inject_style: bool = True, data_is_not_path: bool = False) -> Page:
    """A page from HTML text, the path of an .html file, or a file object (W&B's ``wandb.Html`` arguments).

    A str is a path when it ends in ``.html`` or ``.htm`` and holds no ``<``
    (unless ``data_is_not_path``); a path that is missing is an error, not text.

    :raises SchemaError: a missing or binary file, text that is not UTF-8, a value of another type.
    """
    if isinstance(data, os.PathLike) or (isinstance(data, str) and not data_is_not_path and _looks_like_path(data)):
        payload, _ = file_payload(HTML, data, HTML_FILES, "data")
        raw = _text(payload.read(), str(payload.path))
    elif isinstance(data, str):
        raw = _text(data.encode("utf-8", "surrogatepass"), "the text given")
    elif hasattr(data, "read"):
        if hasattr(data, "seek"):
            data.seek(0)
        got = data.read()
        raw = _text(got.encode("utf-8", "surrogatepass") if isinstance(got, str) else bytes(got), "the file object")
    else:
        raise bad(HTML, "data", f"expected HTML text, an .html path or a file object, given {given(data)}")
    if inject_style:
        raw = inject(raw)
    return Page(Payload.of_bytes(raw))
