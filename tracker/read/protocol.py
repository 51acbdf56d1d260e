"""The reading protocol: what the CLI, the dashboard, ``Api()``, summaries and panels ask of a store.

The folder store (:class:`tracker.Store`, :class:`tracker.RunView`) and the
team store on PostgreSQL (:class:`tracker.team.postgres.TeamStore`) both
satisfy :class:`StoreReader` and :class:`RunReader`: runs, run, records,
table, metrics, summarize, sql and blobs. A feature written against these
protocols works on both, and a capability that needs a store takes one of
these, never a concrete class, so no import points back up.
:class:`RecordsRunMixin` builds tables, metrics and summaries from
``records()`` alone, for readers that have no faster columnar path of their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any, Protocol, runtime_checkable

from tracker.core.records import Record, RunInfo
from tracker.core.summary import Summary, Table

if TYPE_CHECKING:
    import numpy as np


def info_matches(info: RunInfo, project: str | None = None, status: str | None = None, tag: str | None = None,
                 group: str | None = None, job_type: str | None = None) -> bool:
    """Whether a run passes the filters of :meth:`StoreReader.runs`: each one given (not ``None``) matches."""
    return ((project is None or info.project == project) and (status is None or info.status == status)
            and (tag is None or tag in info.tags) and (group is None or info.group == group)
            and (job_type is None or info.job_type == job_type))


@runtime_checkable
class RunReader(Protocol):
    """One run, read-only."""

    id: str

    @property
    def info(self) -> RunInfo:
        """The run's info: name, project, status, times, config, tags, counts."""

    def records(self, schema: str | None = None) -> Iterator[Record]:
        """Every record (of one schema), in log order."""

    def schemas(self) -> list[str]:
        """The schema names present in the run, in order of first appearance."""

    def table(self, schema: str) -> Table:
        """The run's records of ``schema`` as columns."""

    def metrics(self) -> dict[str, np.ndarray]:
        """``{"step": ..., "time": ..., name: ...}``, one entry per ``metrics`` record."""

    def summarize(self, schema: str | None = None) -> list[Summary]:
        """Every summary of every schema present (or of one)."""

    def metric_stats(self) -> dict[str, dict[str, Any]]:
        """Per metric name: count, first, last, min, max and the steps of each (what list views show)."""


@runtime_checkable
class BlobReader(Protocol):
    """The bytes that artifacts and images name, by SHA-256: a store's blob folder or a bucket."""

    def exists(self, sha256: str) -> bool:
        """Whether the blob is stored."""

    def open(self, sha256: str) -> IO[bytes]:
        """A binary file over the blob's bytes.

        :raises StoreError: the blob is missing, or its bytes do not match its name (the error names it).
        """


@runtime_checkable
class StoreReader(Protocol):
    """A store, read-only: a folder or the team database."""

    path: Any

    def run_ids(self) -> list[str]:
        """Every run id."""

    def runs(self, project: str | None = None, status: str | None = None,
             tag: str | None = None, *, group: str | None = None, job_type: str | None = None) -> list[RunInfo]:
        """Every run's info, newest first, optionally filtered (each filter given must match).

        The folder store and the team store also take ``q=``, ``sort=``, ``limit=``, ``cursor=`` and
        ``offset=`` and return a page (:mod:`tracker.read.listing`); a reader without them is paged by
        its caller (the dashboard does).
        """

    def run(self, ref: str) -> RunReader:
        """The run whose id is ``ref`` or a unique prefix of it, else whose name is ``ref``."""

    def sql(self, query: str) -> Any:
        """A DuckDB relation of ``query`` over the views ``runs``, ``metrics``, ``records``, one per schema."""

    @property
    def blobs(self) -> BlobReader:
        """Where this store's blobs are read from."""


class RecordsRunMixin:
    """``table``, ``metrics``, ``schemas`` and ``summarize`` from ``records()`` and a plugin ``host``."""

    host: Any

    def records(self, schema: str | None = None) -> Iterator[Record]:  # pragma: no cover - provided by the reader
        raise NotImplementedError

    def schemas(self) -> list[str]:
        """The schema names present in the run, in order of first appearance."""
        seen: dict[str, None] = {}
        for r in self.records():
            seen.setdefault(r.schema, None)
        return list(seen)

    def table(self, schema: str) -> Table:
        """The run's records of ``schema`` as columns (an empty table when there are none)."""
        compiled = self.host.schemas.get(schema)
        recs = list(self.records(schema))
        return Table(schema, [r.step for r in recs], [r.time for r in recs], [r.data for r in recs], compiled)

    def metrics(self) -> dict[str, np.ndarray]:
        """``{"step": ..., "time": ..., name: ...}``; NaN where a record lacks a metric, bools as 1.0 and 0.0."""
        import numpy as np

        table = self.table("metrics")
        out = dict(table.columns)
        for k, v in out.items():
            if k not in ("step", "time"):
                out[k] = np.asarray(v, dtype=np.float64)
        return out

    def summarize(self, schema: str | None = None) -> list[Summary]:
        """Every summary of every schema present (or of one schema), in that order.

        A summarizer that raises gives a summary that says so instead of stopping the others.
        """
        from tracker.core.summary import summarize_run

        return summarize_run(self, schema)


__all__ = ["BlobReader", "RecordsRunMixin", "RunReader", "StoreReader"]
