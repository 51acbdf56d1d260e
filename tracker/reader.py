"""The reading API: ``open_store``, ``Store.runs``, ``RunView`` and its records.

Listing reads only each segment's first line and its last few kilobytes, so
``Store.runs`` costs the same for a run of ten records as for one of ten
million. Reading records streams each segment in chunks and merges the
segments of a run in log order (:func:`merge_log_order`); :mod:`tracker.columns`
decodes metric columns.
"""

from __future__ import annotations

import heapq
import math
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .bus import TrackerWarning
from .errors import RunNotFound, StoreError, TrackerError
from .format import (
    EVENT_KINDS,
    METRICS,
    NONFINITE_MARKS,
    READ_CHUNK,
    RECORD,
    RECORD_SCHEMA_MARK,
    RUN_ID_RE,
    LineChunks,
    LineError,
    check_run_id,
    decode_nonfinite,
    iter_lines,
    merge_chunk,
    parse_line,
)
from .records import Problem, Record, RunInfo
from .segment import Segment, read_run_info, read_segment, segment_paths
from .summary import Summary, Table, summarize_run

if TYPE_CHECKING:
    import duckdb
    import numpy as np

    from .host import Host
    from .query.team import TeamStore


class LazyHost:
    """A reader that builds its plugin host only when it first needs schemas or summarizers."""

    _host: Host | Callable[[], Host] | None

    @property
    def host(self) -> Host:
        """The plugin host used for schemas and summarizers (built on first use)."""
        if self._host is None:
            from .host import get_host

            self._host = get_host()
        elif callable(self._host):
            self._host = self._host()
        return self._host


class Store(LazyHost):
    """A store folder opened for reading.

    :param path: the store folder; ``None`` resolves it like the CLI does.
    :param host: the plugin host for schemas and summarizers, or a function
        that builds it when first needed (listing runs never needs it, so
        ``tracker runs`` loads no plugin); default: the process's host.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None,
                 host: Host | Callable[[], Host] | None = None) -> None:
        self._host = host
        if path is None:
            from .config import resolve_store_path

            path = resolve_store_path(None, self.host.config)
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise StoreError(f"{self.path} is not a store folder")
        self.runs_dir = self.path / "runs"

    def run_ids(self) -> list[str]:
        """Every run id in the store (folder names that are valid ids)."""
        try:
            with os.scandir(self.runs_dir) as it:
                return sorted(e.name for e in it if e.is_dir() and RUN_ID_RE.match(e.name))
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StoreError(f"cannot read {self.runs_dir}: {exc.strerror}") from None

    def runs(self, project: str | None = None, status: str | None = None,
             tag: str | None = None) -> list[RunInfo]:
        """Every run's info, newest first, optionally filtered.

        A run that cannot be read (a segment its reader may not open) is left
        out and reported with a warning naming the file, so that it never
        hides the others; asking for that run with :meth:`run` raises
        :class:`StoreError`.
        """
        infos = []
        for rid in self.run_ids():
            try:
                info = RunView(self.path, rid, host=self._host).info
            except StoreError as exc:
                warnings.warn(f"tracker: run {rid} is not listed: {exc}", TrackerWarning, stacklevel=2)
                continue
            if project is not None and info.project != project:
                continue
            if status is not None and info.status != status:
                continue
            if tag is not None and tag not in info.tags:
                continue
            infos.append(info)
        infos.sort(key=lambda i: (i.created_at or 0.0, i.id), reverse=True)
        return infos

    def run(self, ref: str) -> RunView:
        """The run whose id is ``ref`` or starts with it (like git), else whose name is ``ref``.

        :raises RunNotFound: no match, or several (the message lists them).
        """
        run_id = resolve_run_ref(ref, self.run_ids(), lambda ids: [i for i in ids if self._name_of(i) == ref],
                                 f"store {self.path}")
        return RunView(self.path, run_id, host=self._host)

    def _name_of(self, run_id: str) -> str | None:
        """The run's name, or ``None`` for a run that cannot be read (it never hides a match)."""
        try:
            return RunView(self.path, run_id, host=self._host).info.name
        except StoreError:
            return None

    def sql(self, query: str, *, use_index: bool = True) -> duckdb.DuckDBPyRelation:
        """Run SQL over the views ``runs``, ``metrics``, ``records`` and one per schema (DuckDB).

        :param use_index: read indexed runs from the Parquet index (``tracker index``).
        :raises QueryError: carrying DuckDB's message.
        :raises TrackerError: when DuckDB is not installed (``pip install "tracker-core[query]"``).
        """
        from .query.sql import query as run_query

        return run_query(self, query, use_index=use_index)
    # --- changes after the fact: appended events and whole-folder renames -----------

    def tag(self, runs: str | Iterable[str], add: Iterable[str] = (), remove: Iterable[str] = ()) -> list[RunInfo]:
        """Add and remove tags of runs (ids, prefixes or names); returns their infos after the edit.

        :raises RunNotFound: an unknown run; :raises TrackerError: a bad tag (nothing changes).
        """
        from .lifecycle import tag_runs

        return tag_runs(self, runs, add, remove)

    def rename(self, run: str, name: str) -> RunInfo:
        """Give a run a new name (one line, not blank)."""
        from .lifecycle import rename_run

        return rename_run(self, run, name)

    def note(self, run: str, text: str, *, append: bool = False) -> RunInfo:
        """Set a run's notes, or with ``append`` add ``text`` as a line after them."""
        from .lifecycle import note_run

        return note_run(self, run, text, append=append)

    def update_config(self, run: str, values: dict[str, Any]) -> RunInfo:
        """Set top-level config keys of a run (appended; the start config is kept)."""
        from .lifecycle import update_config

        return update_config(self, run, values)

    def update_summary(self, run: str, values: dict[str, Any]) -> RunInfo:
        """Set summary values of a run (appended; last write wins)."""
        from .lifecycle import update_summary

        return update_summary(self, run, values)

    def remove(self, runs: str | Iterable[str] = (), *, project: str | None = None, status: str | None = None,
               older_than: float | str | None = None, tags: Iterable[str] = (), force: bool = False,
               dry_run: bool = False) -> list[RunInfo]:
        """Move runs to the trash (by id, or by selection); returns the runs moved (or, dry, to move).

        A named run whose writer is alive is refused unless ``force``; a
        selection skips such runs. ``older_than``: seconds, or text like ``"7d"``.
        """
        from .lifecycle import parse_age, plan_removal, remove_runs

        age = parse_age(older_than) if isinstance(older_than, str) else older_than
        plan = plan_removal(self, runs, project=project, status=status, older_than=age, tags=tags, force=force)
        if dry_run:
            return plan.runs
        moved = set(remove_runs(self, plan))
        return [i for i in plan.runs if i.id in moved]

    def restore(self, runs: str | Iterable[str]) -> list[RunInfo]:
        """Move runs back from the trash; an id that exists again is refused (nothing moves)."""
        from .lifecycle import restore_runs

        return restore_runs(self, runs)

    def trashed(self) -> list[RunInfo]:
        """The runs in the trash, newest first (``tracker runs --trash``)."""
        from .lifecycle import trash_store

        return trash_store(self).runs()

    def gc(self, *, dry_run: bool = False) -> Any:
        """Empty the trash and remove blobs no run references (never one younger than an hour)."""
        from .lifecycle import collect_garbage

        return collect_garbage(self, dry_run=dry_run)

    def du(self) -> dict[str, Any]:
        """Bytes per run and per project, largest first, and the total (see ``tracker du``)."""
        from .lifecycle import disk_usage

        return disk_usage(self)


def merge_log_order(sources: Sequence[Iterable[Record]], tops: list[float] | None = None) -> Iterator[Record]:
    """The records of a run's segments merged in log order, streaming.

    Within a segment, file order: the writer's sequence, whatever its clock
    did. Across segments, by time, where a segment's time is the largest its
    writer's clock has shown so far, so that a clock stepping back (NTP, a
    resumed virtual machine) never reorders a writer's own records;
    ties go to the earlier segment. :func:`tracker.columns.metric_columns`
    orders columns by the same rule.

    :param tops: each source's largest time before this call (updated in
        place), for a reader that merges a growing run in batches.
    """
    def keyed(i: int, source: Iterable[Record]) -> Iterator[tuple[float, int, Record]]:
        top = tops[i] if tops is not None else -math.inf
        for rec in source:
            t = rec.time
            if t > top:
                top = t
                if tops is not None:
                    tops[i] = t
            yield top, i, rec

    for _, _, rec in heapq.merge(*(keyed(i, src) for i, src in enumerate(sources))):
        yield rec


def resolve_run_ref(ref: str, ids: list[str], named: Callable[[list[str]], list[str]], where: str) -> str:
    """The run id that ``ref`` names: an id, else the unique id it starts (like git), else a unique name.

    :param named: gives the ids (of those given) whose run is named ``ref``;
        asked only when no id matches.
    :param where: the store, for the messages.
    :raises RunNotFound: no match, or several (the message lists them).
    """
    if not isinstance(ref, str) or not ref:
        raise RunNotFound(f"no run {ref!r}: expected a run id or a unique prefix of one")
    if ref in ids:
        return ref
    matches = [i for i in ids if i.startswith(ref)] if RUN_ID_RE.match(ref) else []
    if not matches:
        matches = named(ids)
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise RunNotFound(f"no run matches {ref!r} in {where}")
    shown = ", ".join(matches[:10]) + (" ..." if len(matches) > 10 else "")
    raise RunNotFound(f"{ref!r} is ambiguous: {len(matches)} runs match ({shown})", matches)


def open_store(path: str | os.PathLike[str] | None = None) -> Store | TeamStore:
    """Open a store for reading (default: TRACKER_STORE, tracker.toml, ./.tracker).

    A ``postgresql://`` URL opens the team database with the same reading API.
    """
    target = path if path is not None else os.environ.get("TRACKER_STORE")
    if isinstance(target, str) and target.startswith(("postgresql://", "postgres://")):
        from .query.team import open_team_store

        return open_team_store(target)
    return Store(path)


class RunView(LazyHost):
    """One run of a store, read-only.

    ``problems`` collects every damaged line met while reading; each is also
    warned about once.
    """

    def __init__(self, store: str | os.PathLike[str], run_id: str,
                 host: Host | Callable[[], Host] | None = None) -> None:
        self.store = Path(store)
        self.id = run_id
        try:
            # Only a valid id names a folder: "..", "" or "a/b" must not lead outside the store.
            check_run_id(run_id)
        except TrackerError as exc:
            raise RunNotFound(f"no such run in store {self.store}: {exc}") from None
        self.path = self.store / "runs" / run_id
        if not self.path.is_dir():
            raise RunNotFound(f"no run {run_id!r} in store {self.store}")
        self._host = host
        self._info: RunInfo | None = None
        self.problems: list[Problem] = []
        self._unknown_kinds: set[Any] = set()

    def segment_paths(self) -> list[Path]:
        """The run's segment files, sorted by name."""
        return segment_paths(self.path)

    def segments(self) -> list[Segment]:
        """Header and tail of every segment."""
        return [read_segment(p) for p in self.segment_paths()]

    @property
    def info(self) -> RunInfo:
        """The run's info (computed on first access; see :meth:`refresh`)."""
        if self._info is None:
            self._info = self._read_info()
        return self._info

    def _repr_html_(self) -> str:
        """The run in a notebook: name, status, config and last metrics (see :mod:`tracker.display`)."""
        from .display import info_html

        return info_html(self.info)

    def refresh(self) -> RunInfo:
        """Read the info again (a running run's status and counts change)."""
        self._info = None
        return self.info

    def _timeout(self) -> float:
        # [store] heartbeat_timeout of tracker.toml, also for a view opened without a host
        # (open_store()): the process's host is built, but only for a writer on another host.
        return self.host.config.heartbeat_timeout

    def _read_info(self) -> RunInfo:
        return read_run_info(self.path, self.id, self.segments(), self._timeout, self._warn)

    def max_step(self) -> int | None:
        """The largest step of the run, exact (scans segments whose writer never finished)."""
        best = None
        for s in self.segments():
            fin = s.finish
            if fin is not None:
                step = (fin.get("data") or {}).get("max_step")
            else:
                step = max((r.step for r in self._segment_records(s.path, None, False)), default=None)
            if step is not None and (best is None or step > best):
                best = step
        return best

    # --- records ------------------------------------------------------------------------------

    def _warn(self, problem: Problem) -> None:
        self.problems.append(problem)
        warnings.warn(f"tracker: {problem}", TrackerWarning, stacklevel=3)

    def _lines(self, path: Path, quiet_tail: bool, chunk: int = READ_CHUNK) -> Iterator[tuple[int, bytes]]:
        """Numbered complete lines of a segment; a torn last line is reported (unless ``quiet_tail``)."""
        lineno = 0
        for lines in self._line_chunks(path, quiet_tail, chunk):
            for line in lines:
                lineno += 1
                yield lineno, line

    def _segment_records(self, path: Path, schema: str | None, quiet_tail: bool,
                         chunk: int = READ_CHUNK) -> Iterator[Record]:
        host = self._host if schema is None and not callable(self._host) else self.host
        compiled = None
        for lineno, line in self._lines(path, quiet_tail, chunk):
            try:
                ev = parse_line(line)
            except LineError as exc:
                self._warn(Problem(str(path), lineno, exc.kind, str(exc)))
                continue
            kind = ev.get("kind")
            if kind != RECORD:
                if kind not in EVENT_KINDS and kind not in self._unknown_kinds:
                    # A newer version's event: skipped, said once per kind (docs/format.md).
                    self._unknown_kinds.add(kind)
                    self._warn(Problem(str(path), lineno, "unknown",
                                       f"an event of kind {kind!r}, which this version does not know (ignored)"))
                continue
            if schema is not None and ev.get("schema") != schema:
                continue
            data = ev.get("data")
            if not isinstance(data, dict):
                self._warn(Problem(str(path), lineno, "corrupt", "record without a data object"))
                continue
            if NONFINITE_MARKS[0] in line or NONFINITE_MARKS[1] in line:
                name = ev.get("schema")
                if host is None:
                    # Only the schema tells a non-finite float from a string "NaN" in a str field.
                    host = self.host
                compiled = host.schemas.get(name) if compiled is None or compiled.name != name else compiled
                data = compiled.decode(data) if compiled is not None else decode_nonfinite(data)
            yield Record(ev.get("step"), ev.get("time"), ev.get("schema"), data, ev.get("w", ""), ev.get("seq", 0))

    def _quiet(self) -> bool:
        # A running writer's last line may simply be in progress.
        return self.info.status == "running"

    def records(self, schema: str | None = None) -> Iterator[Record]:
        """Every record (of one schema), in log order (see :func:`merge_log_order`)."""
        quiet = self._quiet()
        paths = self.segment_paths()
        # Any number of segments within bounded memory and open files: LineChunks opens a file
        # only while it reads a chunk, and a merge of many segments reads smaller chunks.
        chunk = merge_chunk(len(paths))
        gens = [self._segment_records(p, schema, quiet, chunk) for p in paths]
        if len(gens) == 1:
            yield from gens[0]
        else:
            yield from merge_log_order(gens)

    def schemas(self) -> list[str]:
        """The schema names present in the run, in order of first appearance."""
        seen: dict[str, None] = {}
        mark = RECORD_SCHEMA_MARK
        for p in self.segment_paths():
            for _, line in iter_lines(p):
                i = line.find(mark)
                if i >= 0:
                    j = i + len(mark)
                    seen.setdefault(line[j:line.find(b'"', j)].decode("utf-8", "replace"), None)
        return list(seen)

    def table(self, schema: str) -> Table:
        """The run's records of ``schema`` as columns (an empty table when there are none)."""
        if schema == METRICS:
            cols, n = self._metrics_columns()
            compiled = self.host.schemas.get(METRICS)
            return Table.from_columns(METRICS, cols, n, compiled,
                                      rows=lambda: (r.data for r in self.records(METRICS)))
        compiled = self.host.schemas.get(schema)
        recs = list(self.records(schema))
        return Table(schema, [r.step for r in recs], [r.time for r in recs], [r.data for r in recs], compiled)

    def metrics(self) -> dict[str, np.ndarray]:
        """``{"step": ..., "time": ..., name: ...}``, one entry per ``metrics`` record in log order.

        NaN where a record lacks a metric; bools read as 1.0 and 0.0.
        """
        cols, _ = self._metrics_columns()
        return cols

    def _metrics_columns(self) -> tuple[dict[str, np.ndarray], int]:
        from .columns import metric_columns

        quiet = self._quiet()
        return metric_columns(((str(p), self._line_chunks(p, quiet)) for p in self.segment_paths()), self._warn)

    def _line_chunks(self, path: Path, quiet_tail: bool, chunk: int = READ_CHUNK) -> Iterator[list[bytes]]:
        """The complete lines of a segment, a list per chunk read; a torn last line is reported.

        Like :meth:`_lines` but with one generator step per 1 MiB instead of one per line.
        """
        reader = LineChunks(path, 0, chunk)
        yield from reader
        if reader.rest and not quiet_tail:
            self._warn(Problem(str(path), reader.lines + 1, "torn",
                               f"the last line is incomplete ({len(reader.rest)} bytes): a write was cut off"))

    def artifacts(self) -> list[Any]:
        """Every :class:`tracker.Artifact` of the run, in log order."""
        from .capture.artifacts import artifacts

        return artifacts(self)

    def open_artifact(self, name: str) -> Any:
        """A binary file object over the latest version of file artifact ``name``.

        :raises TrackerError: no such artifact, or a folder; :class:`StoreError`: its bytes are missing.
        """
        from .capture.artifacts import open_artifact

        return open_artifact(self, name)

    def copy_artifact(self, name: str, dest: str | os.PathLike[str]) -> Path:
        """Copy artifact ``name`` (a file or a folder) to ``dest``, every hash checked; returns ``dest``.

        :raises StoreError: a missing or damaged blob or referenced file (nothing is left at ``dest``).
        """
        from .capture.artifacts import copy_artifact

        return copy_artifact(self, name, dest)

    def summarize(self, schema: str | None = None) -> list[Summary]:
        """Every summary of every schema present (or of one schema), in that order.

        A summarizer that raises gives a summary that says so instead of stopping the others.
        """
        return summarize_run(self, schema)
