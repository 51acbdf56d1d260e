"""What a media file is, by its first bytes; the bytes a media object will store; PyAV loaded when used.

Media files are stored as they are, so their format is read from their
content, never from their name: a file whose first bytes do not match its
name (``clip.mp4`` holding a GIF) is refused at logging, with a
:class:`~tracker.SchemaError` naming the file, what its name says and what
its bytes are. :func:`sniff` knows the magic numbers:

=========  ==================================================
wav        ``RIFF`` .... ``WAVE``
mp3        ``ID3`` (a tag), or an MPEG audio frame sync (``FF Ex``/``FF Fx``)
ogg        ``OggS``
flac       ``fLaC``
mp4        ``ftyp`` at byte 4
webm       EBML ``1A 45 DF A3`` with the doctype ``webm``
gif        ``GIF87a`` / ``GIF89a``
glb        ``glTF`` (binary glTF)
ply        ``ply`` and a line end
=========  ==================================================

Text formats (obj, gltf, ascii stl, html) and binary STL (no magic number:
its size is 84 + 50 x triangles) are checked by the modules of their kind.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import attrs

from tracker.core.errors import SchemaError, TrackerError
from tracker.core.files import NotAFileError, open_regular
from tracker.core.values import given

#: The media schemas whose records name one blob by ``sha256`` (``tracker gc``, ``verify`` and ``sync`` keep them).
MEDIA_SCHEMAS = ("audio", "video", "object3d", "html")
#: The content type of each stored format (``points`` is the binary layout of :mod:`tracker.capture.object3d`).
CONTENT_TYPES = {"wav": "audio/wav", "mp3": "audio/mpeg", "ogg": "audio/ogg", "flac": "audio/flac",
                 "mp4": "video/mp4", "webm": "video/webm", "gif": "image/gif",
                 "points": "application/octet-stream", "obj": "text/plain; charset=utf-8",
                 "ply": "application/octet-stream", "stl": "model/stl", "glb": "model/gltf-binary",
                 "gltf": "model/gltf+json", "html": "text/html; charset=utf-8"}
#: Bytes read to tell a file's format.
HEAD = 64
INSTALL = 'pip install "tracker-core[media]"'


def content_type(schema: str, fmt: str | None = None) -> str:
    """The content type to serve a media record's blob with: by its ``format`` (``html`` records have none)."""
    return CONTENT_TYPES.get("html" if schema == "html" else (fmt or ""), "application/octet-stream")


def bad(schema: str, field: str, message: str) -> SchemaError:
    """The :class:`SchemaError` of one bad value."""
    return SchemaError(schema, [(field, message)])


def check_caption(schema: str, caption: Any) -> str:
    """``caption`` as a str (``None`` is ``""``, as in W&B)."""
    if caption is None:
        return ""
    if type(caption) is not str:
        raise bad(schema, "caption", f"expected a str, given {given(caption)}")
    return caption


def check_name(schema: str, name: Any) -> str:
    """The record's name: a non-empty str."""
    if type(name) is not str or not name:
        raise bad(schema, "name", f"expected a non-empty str, given {given(name)}")
    return name


def av_module() -> Any:
    """PyAV (``import av``), or a :class:`TrackerError` naming the extra to install."""
    try:
        import av
    except ImportError:
        raise TrackerError(f"encoding and reading audio and video needs PyAV: {INSTALL}") from None
    return av


def pil_module() -> Any:
    """Pillow's ``Image`` module, or a :class:`TrackerError` naming the extra to install."""
    try:
        from PIL import Image
    except ImportError:
        raise TrackerError(f"GIF needs Pillow: {INSTALL}") from None
    return Image


def sniff(head: bytes) -> str | None:
    """The format that the first bytes of a file show (see the module's table), or ``None``."""
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "wav"
    if head[:4] == b"OggS":
        return "ogg"
    if head[:4] == b"fLaC":
        return "flac"
    if head[:3] == b"ID3":
        return "mp3"
    if len(head) >= 2 and head[0] == 0xFF and (head[1] & 0xE0) == 0xE0 and (head[1] & 0x06) != 0:
        return "mp3"  # an MPEG audio frame: 11 sync bits, and a layer (bits 1-2) other than "reserved"
    if head[4:8] == b"ftyp":
        return "mp4"
    if head[:4] == b"\x1a\x45\xdf\xa3":
        return "webm" if b"webm" in head else "mkv"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if head[:4] == b"glTF":
        return "glb"
    if head[:4] in (b"ply\n", b"ply\r"):
        return "ply"
    return None


@attrs.frozen
class Payload:
    """The bytes a media object stores: in memory (``data``) or a file as it is (``path``), checked already.

    A file is copied into the store when the object is logged; its size at
    that moment must be the size it had when it was checked.
    """

    data: bytes | None = None
    path: Path | None = None
    size: int = 0

    @classmethod
    def of_bytes(cls, data: bytes) -> Payload:
        """Bytes kept in memory."""
        return cls(data=data, size=len(data))

    def head(self, n: int = HEAD) -> bytes:
        """The first ``n`` bytes."""
        if self.data is not None:
            return self.data[:n]
        with open_regular(self.path) as f:  # type: ignore[arg-type]
            return f.read(n)

    def read(self) -> bytes:
        """All the bytes."""
        if self.data is not None:
            return self.data
        with open_regular(self.path, buffering=-1) as f:  # type: ignore[arg-type]
            return f.read()

    def opened(self) -> Any:
        """What PyAV and Pillow open: the path, or a file object over the bytes."""
        return str(self.path) if self.path is not None else io.BytesIO(self.data or b"")

    def store(self, blobs: Any, schema: str) -> str:
        """Put the bytes in ``blobs`` (a :class:`~tracker.capture.blobs.BlobStore`): their sha256.

        :raises SchemaError: a file that changed size since it was checked (a new blob may be left for ``gc``).
        """
        if self.data is not None:
            return blobs.put_bytes(self.data)[0]
        sha, size = blobs.put_file(self.path)
        if size != self.size:
            raise bad(schema, "data_or_path", f"{self.path} changed while being logged: {self.size} bytes when "
                                              f"checked, {size} bytes when stored")
        return sha


def file_payload(schema: str, path: Any, formats: dict[str, str], field: str = "data_or_path") -> tuple[Payload, str]:
    """A media file checked by its name and its first bytes: ``(payload, format)``.

    :param formats: file name ending (``".mp4"``) -> the format its bytes must show.
    :raises SchemaError: a missing file, not a regular file, an empty file, a name ending in none of
        ``formats``, or bytes of another format than the name says.
    """
    p = Path(os.fspath(path))
    low = p.name.lower()
    expected = next((fmt for end, fmt in sorted(formats.items(), key=lambda kv: -len(kv[0])) if low.endswith(end)),
                    None)
    names = ", ".join(sorted(formats))
    if expected is None:
        raise bad(schema, field, f"expected a file named *{names.replace(', ', ', *')}, given {p}")
    try:
        with open_regular(p) as f:
            size = os.fstat(f.fileno()).st_size
    except NotAFileError as exc:
        raise bad(schema, field, f"expected a {expected} file, given {exc.path}, {exc.kind}") from None
    except FileNotFoundError:
        raise bad(schema, field, f"expected a {expected} file, given a missing file: {p}") from None
    except OSError as exc:
        raise bad(schema, field, f"expected a readable {expected} file, given {p}: {exc.strerror}") from None
    if size == 0:
        raise bad(schema, field, f"expected a {expected} file, given an empty file: {p}")
    return Payload(path=p, size=size), expected


def mismatch(schema: str, where: Any, expected: str, found: str | None, field: str = "data_or_path") -> SchemaError:
    """The error for bytes that are not what the name (or ``format=``) says."""
    what = f"the bytes of a {found} file" if found else "bytes of no known format"
    return bad(schema, field, f"expected a {expected} file, given {where} holding {what} (its name does not "
                              "match its content)")
