"""Built-in ``artifact`` and ``artifact_use`` schemas: what a run logged and what it used, and their listings.

``artifact`` is written by ``run.log_artifact`` once the bytes are in the blob
store; ``artifact_use`` by ``run.use_artifact``. Versions, aliases and
lineage are derived from these records at read time (docs/artifacts.md).
With ``[team] url`` set, the team database is where a name that the run's
own store does not know is looked for (``tracker_artifact_sources``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

import attrs

from tracker import Config, Schema, Summarizer, Summary, Table, hookimpl, open_store

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
    ``type`` says what it is (``model``, ``dataset``; ``None``: unspecified), ``aliases`` the
    aliases set on its version as it was logged, ``filename`` a file's name inside the artifact
    (what ``download()`` writes; ``None``: the name's last part), ``description`` and ``metadata``
    what W&B's ``Artifact(name, type, description, metadata)`` carries.
    """

    name: str = attrs.field(validator=_nonempty)
    kind: str = attrs.field(default="file", validator=_nonempty)
    sha256: str = attrs.field(validator=_sha256)
    size: int = attrs.field(validator=attrs.validators.ge(0))
    folder: bool = False
    files: int = attrs.field(default=1, validator=attrs.validators.ge(0))
    reference: str | None = None
    type: str | None = None
    aliases: list[str] = attrs.field(factory=list)
    filename: str | None = None
    description: str | None = None
    metadata: dict[str, Any] | None = None


@attrs.frozen(kw_only=True)
class ArtifactUseRecord:
    """A run used a version of an artifact as an input (``run.use_artifact``).

    ``project`` and ``name`` name the artifact, ``version`` the version it was then
    (``"v3"``), ``sha256`` its content (which names it whatever happens to the numbering),
    ``alias`` the alias it was asked for by (``None``: by its version).
    """

    name: str = attrs.field(validator=_nonempty)
    project: str | None = None
    version: str = attrs.field(validator=_nonempty)
    sha256: str = attrs.field(validator=_sha256)
    type: str | None = None
    alias: str | None = None


@hookimpl
def tracker_schemas() -> list[Schema]:
    return [Schema("artifact", ArtifactRecord, description="a file or folder stored by content, or referenced"),
            Schema("artifact_use", ArtifactUseRecord, description="a version of an artifact this run used")]


@hookimpl
def tracker_summarizers() -> list[Summarizer]:
    return [Summarizer("artifact.list", "artifact", summarize_artifacts,
                       "every artifact: name, kind, size, hash prefix, step"),
            Summarizer("artifact_use.list", "artifact_use", summarize_uses,
                       "every artifact version used: name, version, alias, hash prefix, step")]


@hookimpl
def tracker_artifact_sources(config: Config) -> dict[str, Callable[[], Any]]:
    """The lab's team database (``[team] url``, else ``TRACKER_TEAM_URL``), for names logged on other machines."""
    url = config.team_url or os.environ.get("TRACKER_TEAM_URL")
    if not url or not url.startswith(("postgresql://", "postgres://")):
        return {}
    return {"the team database": lambda: open_store(url)}


def summarize_artifacts(table: Table) -> Summary:
    """One row per logged artifact, in log order."""
    rows = []
    for i in range(len(table)):
        rows.append({"name": table["name"][i], "kind": table["kind"][i], "size": int(table["size"][i]),
                     "files": int(table["files"][i]), "sha256": table["sha256"][i][:12],
                     "step": int(table["step"][i]),
                     "stored": "reference" if table["reference"][i] else "copy"})
    return Summary("Artifacts", rows, columns=["name", "kind", "size", "files", "sha256", "step", "stored"])


def summarize_uses(table: Table) -> Summary:
    """One row per version used, in log order."""
    rows = []
    for i in range(len(table)):
        project = table["project"][i]
        name = table["name"][i]
        rows.append({"artifact": f"{project}/{name}" if project else name, "version": table["version"][i],
                     "alias": table["alias"][i] or "", "type": table["type"][i] or "unspecified",
                     "sha256": table["sha256"][i][:12], "step": int(table["step"][i])})
    return Summary("Artifacts used", rows, columns=["artifact", "version", "alias", "type", "sha256", "step"])
