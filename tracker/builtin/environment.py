"""Built-in ``environment`` schema: where and on what a run's process ran, recorded once at its start.

Written by the environment recorder (``tracker.capture.environment``) in a
background thread, one record per writing process (each rank of a run records
its own). The installed distributions and the uncommitted diff are blobs
named by their sha256 (``packages``, ``git_diff``), so a store of many runs
with the same packages holds the list once. Environment variables are never
recorded.
"""

from __future__ import annotations

from typing import Any

import attrs

from tracker import Schema, Summarizer, Summary, Table, hookimpl

_sha = attrs.validators.optional(attrs.validators.matches_re(r"[0-9a-f]{64}"))
_nonneg = attrs.validators.optional(attrs.validators.ge(0))


@attrs.frozen(kw_only=True)
class Environment:
    """Python, platform, hardware, packages, command and git of one process of a run."""

    python: str
    implementation: str = ""
    executable: str = ""
    platform: str = ""
    machine: str = ""
    host: str = ""
    cpu: str = ""
    cpu_count: int | None = attrs.field(default=None, validator=_nonneg)
    memory_bytes: int | None = attrs.field(default=None, validator=_nonneg)
    #: One ``{"index", "name", "memory_total_bytes"}`` per GPU that NVML (or torch, when imported) sees.
    gpus: list[dict[str, Any]] = attrs.field(factory=list)
    gpu_driver: str | None = None
    cuda: str | None = None
    #: The sha256 of the blob of installed distributions (``name==version`` lines, sorted).
    packages: str | None = attrs.field(default=None, validator=_sha)
    packages_count: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    command: list[str] = attrs.field(factory=list)
    cwd: str | None = None
    git_root: str | None = None
    git_remote: str | None = None
    git_branch: str | None = None
    git_commit: str | None = None
    git_dirty: bool | None = None
    #: The sha256 of the blob of ``git diff HEAD`` (tracked files; binary files named only).
    git_diff: str | None = attrs.field(default=None, validator=_sha)
    git_diff_bytes: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    git_diff_truncated: bool = False
    git_files_changed: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    #: Lines added and removed by the uncommitted diff (all of it, also past the cut).
    git_insertions: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    git_deletions: int = attrs.field(default=0, validator=attrs.validators.ge(0))
    #: What could not be recorded (a missing or slow git, an unreadable package), one line each.
    warnings: list[str] = attrs.field(factory=list)


@hookimpl
def tracker_schemas() -> list[Schema]:
    return [Schema("environment", Environment,
                   description="Python, platform, GPUs, packages, command and git of a run's process")]


@hookimpl
def tracker_summarizers() -> list[Summarizer]:
    return [Summarizer("environment.facts", "environment", summarize_environment,
                       "per process: Python, platform, GPUs, packages, git commit")]


def summarize_environment(table: Table) -> Summary:
    """One row per recording process: host, Python, platform, GPUs, packages, git commit and dirty flag."""
    rows = []
    for i in range(len(table)):
        gpus = table["gpus"][i] or []
        commit = table["git_commit"][i]
        rows.append({"host": table["host"][i], "python": table["python"][i], "platform": table["platform"][i],
                     "gpus": ", ".join(str(g.get("name", "")) for g in gpus) or "-",
                     "cuda": table["cuda"][i] or "-", "packages": int(table["packages_count"][i]),
                     "git": (commit[:12] + (" (dirty)" if table["git_dirty"][i] else "")) if commit
                     else "-" if table["git_root"][i] else "not a git repository"})
    return Summary("Environment", rows)
