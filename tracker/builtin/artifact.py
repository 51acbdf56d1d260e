"""Built-in ``artifact`` schema: a file or folder stored by content (or referenced), and its listing.

Written by ``run.log_artifact`` once the bytes are in the blob store.
"""

from __future__ import annotations

import re

import attrs

from tracker import Schema, Summarizer, Summary, Table, hookimpl

_SHA = re.compile(r"[0-9a-f]{64}")


def _sha256(_inst: object, attribute: attrs.Attribute, value: str) -> None:
    if not _SHA.fullmatch(value):
        raise ValueError(f"{attribute.name} must be 64 lowercase hex digits")


def _nonempty(_inst: object, attribute: attrs.Attribute, value: str) -> None:
    if not value:
        raise ValueError(f"{attribute.name} must not be empty")


@attrs.frozen(kw_only=True)
class ArtifactRecord:
    """A logged artifact: its name and kind, hash and size; a folder's hash is its manifest's.

    ``reference`` is the absolute path of a file or folder recorded without a copy (``copy=False``).
    """

    name: str = attrs.field(validator=_nonempty)
    kind: str = attrs.field(default="file", validator=_nonempty)
    sha256: str = attrs.field(validator=_sha256)
    size: int = attrs.field(validator=attrs.validators.ge(0))
    folder: bool = False
    files: int = attrs.field(default=1, validator=attrs.validators.ge(0))
    reference: str | None = None


@hookimpl
def tracker_schemas() -> list[Schema]:
    return [Schema("artifact", ArtifactRecord, description="a file or folder stored by content, or referenced")]


@hookimpl
def tracker_summarizers() -> list[Summarizer]:
    return [Summarizer("artifact.list", "artifact", summarize_artifacts,
                       "every artifact: name, kind, size, hash prefix, step")]


def summarize_artifacts(table: Table) -> Summary:
    """One row per logged artifact, in log order."""
    rows = []
    for i in range(len(table)):
        rows.append({"name": table["name"][i], "kind": table["kind"][i], "size": int(table["size"][i]),
                     "files": int(table["files"][i]), "sha256": table["sha256"][i][:12],
                     "step": int(table["step"][i]),
                     "stored": "reference" if table["reference"][i] else "copy"})
    return Summary("Artifacts", rows, columns=["name", "kind", "size", "files", "sha256", "step", "stored"])
