"""Images and media inside table cells: the reference a cell holds, and the blobs a run's tables name.

A ``wandb.Table`` cell holding a ``wandb.Image`` is stored as the image's PNG
blob plus, in the ``table`` record, a reference to it:
``{"_type": "image-file", "sha256": ..., "width": ..., "height": ..., "mode": ..., "caption": ...}``
(W&B names an image cell ``image-file`` too). A cell holding a ``wandb.Audio``,
``wandb.Video``, ``wandb.Object3D`` or ``wandb.Html`` is stored the same way,
the reference holding the fields of the ``audio``, ``video``, ``object3d`` or
``html`` record but the name, under W&B's ``_type`` (``audio-file``,
``video-file``, ``object3D-file``, ``html-file``). ``tracker gc`` keeps those
blobs, ``tracker verify`` checks them, ``tracker sync`` uploads them and the
dashboard serves image cells as thumbnails.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

#: The ``_type`` of an image cell.
IMAGE_FILE = "image-file"
#: The ``_type`` of a cell holding each media schema's blob (W&B's names).
MEDIA_FILES = {"audio": "audio-file", "video": "video-file", "object3d": "object3D-file", "html": "html-file"}
_BLOB_TYPES = frozenset({IMAGE_FILE, *MEDIA_FILES.values()})
_SHA_RE = re.compile(r"[0-9a-f]{64}")


def image_cell(sha256: str, width: int, height: int, mode: str, caption: str) -> dict[str, Any]:
    """The reference a table cell holds for an image stored as blob ``sha256``."""
    return {"_type": IMAGE_FILE, "sha256": sha256, "width": width, "height": height, "mode": mode,
            "caption": caption}


def media_cell(schema: str, record: dict[str, Any]) -> dict[str, Any]:
    """The reference a table cell holds for a media object: its record's fields but the name, and ``_type``."""
    return {"_type": MEDIA_FILES[schema], **{k: v for k, v in record.items() if k != "name"}}


def is_blob_cell(value: Any) -> bool:
    """Whether a table cell is a reference to a blob: an image or a media cell with a sha256."""
    return (type(value) is dict and value.get("_type") in _BLOB_TYPES and type(value.get("sha256")) is str
            and _SHA_RE.fullmatch(value["sha256"]) is not None)


def is_image_cell(value: Any) -> bool:
    """Whether a table cell is an image reference (``_type`` ``image-file`` and a sha256)."""
    return (type(value) is dict and value.get("_type") == IMAGE_FILE and type(value.get("sha256")) is str
            and _SHA_RE.fullmatch(value["sha256"]) is not None)


def _table_cells(view: Any, keep: Callable[[Any], bool]) -> Iterator[tuple[str, int, str, dict[str, Any]]]:
    """Every cell of the run's ``table`` records that ``keep`` accepts: ``(table name, row, column, cell)``, in
    log order."""
    if "table" not in view.schemas():
        return
    for rec in view.records("table"):
        d = rec.data
        columns = d.get("columns") or []
        for i, row in enumerate(d.get("data") or []):
            for column, cell in zip(columns, row, strict=False):
                if keep(cell):
                    yield d.get("name", ""), i, column, cell


def table_images(view: Any) -> Iterator[tuple[str, int, str, dict[str, Any]]]:
    """Every image cell of the run's ``table`` records: ``(table name, row, column, cell)``, in log order."""
    yield from _table_cells(view, is_image_cell)


def table_blobs(view: Any) -> Iterator[tuple[str, int, str, dict[str, Any]]]:
    """Every image and media cell of the run's ``table`` records: ``(table name, row, column, cell)``."""
    yield from _table_cells(view, is_blob_cell)


def table_image_shas(view: Any) -> set[str]:
    """The sha256 of every image and media blob the run's tables hold."""
    return {cell["sha256"] for _, _, _, cell in table_blobs(view)}
