"""Images inside table cells: the reference a cell holds, and the blobs a run's tables name.

A ``wandb.Table`` cell holding a ``wandb.Image`` is stored as the image's PNG
blob plus, in the ``table`` record, a reference to it:
``{"_type": "image-file", "sha256": ..., "width": ..., "height": ..., "mode": ..., "caption": ...}``
(W&B names an image cell ``image-file`` too). ``tracker gc`` keeps those blobs,
``tracker verify`` checks them and the dashboard serves them as thumbnails.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

#: The ``_type`` of an image cell.
IMAGE_FILE = "image-file"
_SHA_RE = re.compile(r"[0-9a-f]{64}")


def image_cell(sha256: str, width: int, height: int, mode: str, caption: str) -> dict[str, Any]:
    """The reference a table cell holds for an image stored as blob ``sha256``."""
    return {"_type": IMAGE_FILE, "sha256": sha256, "width": width, "height": height, "mode": mode,
            "caption": caption}


def is_image_cell(value: Any) -> bool:
    """Whether a table cell is an image reference (``_type`` ``image-file`` and a sha256)."""
    return (type(value) is dict and value.get("_type") == IMAGE_FILE and type(value.get("sha256")) is str
            and _SHA_RE.fullmatch(value["sha256"]) is not None)


def table_images(view: Any) -> Iterator[tuple[str, int, str, dict[str, Any]]]:
    """Every image cell of the run's ``table`` records: ``(table name, row, column, cell)``, in log order."""
    if "table" not in view.schemas():
        return
    for rec in view.records("table"):
        d = rec.data
        columns = d.get("columns") or []
        for i, row in enumerate(d.get("data") or []):
            for column, cell in zip(columns, row, strict=False):
                if is_image_cell(cell):
                    yield d.get("name", ""), i, column, cell


def table_image_shas(view: Any) -> set[str]:
    """The sha256 of every image the run's tables hold."""
    return {cell["sha256"] for _, _, _, cell in table_images(view)}
