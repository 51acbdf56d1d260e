"""The reading API: ``open_store``, ``Store.runs``, ``RunView`` and its records.

Listing reads only each segment's first line and its last few kilobytes, so
``Store.runs`` costs the same for a run of ten records as for one of ten
million. Reading records streams each segment in chunks and merges the
segments of a run in log order (:func:`merge_log_order`); :mod:`tracker.read.columns`
decodes metric columns. A run's view, :class:`RunView`, lives in :mod:`tracker.read.view`
(imported here too, as ``LazyHost`` and ``merge_log_order`` are).
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracker.core.errors import RunNotFound, StoreError
from tracker.core.format import RUN_ID_RE
from tracker.core.records import RunInfo
from tracker.host.bus import TrackerWarning
from tracker.read.edits import edit_paths
from tracker.read.index import (
    CatalogEntry,
    Writable,
    catalog_entries,
    combine_stats,
    folder_state,
    index_enabled,
)
from tracker.read.liveness import hostname
from tracker.read.protocol import info_matches
from tracker.read.segment import segment_sizes
from tracker.read.view import LazyHost, RunView, merge_log_order

if TYPE_CHECKING:
    from tracker.host.host import Host

__all__ = ["LazyHost", "RunView", "Store", "merge_log_order", "resolve_run_ref"]

#: At most this many runs added since the run table was written are derived for a page of the newest runs
#: (more: the whole catalog is listed, which derives and keeps them).
ADDED_AT_ONCE = 200


class Store(LazyHost):
    """A store folder opened for reading.

    :param path: the store folder; ``None`` resolves it like the CLI does.
    :param host: the plugin host for schemas and summarizers, or a function
        that builds it when first needed (listing runs never needs it, so
        ``tracker runs`` loads no plugin); default: the process's host.
    :param write_derived: keep derived data under ``<store>/index/`` (``False``:
        read the same way, writing nothing).
    """

    def __init__(self, path: str | os.PathLike[str] | None = None,
                 host: Host | Callable[[], Host] | None = None, *, write_derived: bool = True) -> None:
        self._host = host
        if path is None:
            from tracker.core.config import resolve_store_path

            path = resolve_store_path(None, self.host.config)
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise StoreError(f"{self.path} is not a store folder")
        self.runs_dir = self.path / "runs"
        self._writable = Writable(write_derived)

    def run_ids(self) -> list[str]:
        """Every run id in the store (folder names that are valid ids)."""
        try:
            with os.scandir(self.runs_dir) as it:
                return sorted(e.name for e in it if e.is_dir() and RUN_ID_RE.match(e.name))
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise StoreError(f"cannot read {self.runs_dir}: {exc.strerror}") from None

    def runs(self, project: str | None = None, status: str | None = None, tag: str | list[str] | None = None, *,
             q: str | None = None, group: str | None = None, job_type: str | None = None, sort: str | None = None,
             limit: int | None = None, cursor: str | None = None, offset: int | None = None) -> list[RunInfo]:
        """Runs' infos, newest first (or in ``sort``'s order), filtered; a page of them with ``limit``.

        A run that cannot be read (a segment its reader may not open) is left
        out and reported with a warning naming the file, so that it never
        hides the others; asking for that run with :meth:`run` raises
        :class:`StoreError`.

        :param tag: a tag, or several (runs with all of them).
        :param q: text in the id, name, project, tags, notes, group or job type (case folded).
        :param sort: a column (:mod:`tracker.read.listing`): ``created_at``, ``name``, ``status``...,
            ``config.KEY`` or ``metric.NAME.last|min|max``; ``-`` first for descending (default ``-created_at``).
        :param limit: at most this many runs; :param cursor: the ``next`` of the previous page (keyset: runs
            added meanwhile never repeat or skip a run of the pages to come); :param offset: or rows to skip.
        :returns: a :class:`~tracker.read.listing.RunPage` (a list, with ``total`` and ``next``).
        :raises ListingError: a sort, cursor, limit or offset that cannot be used.
        """
        from tracker.read.listing import RunFilter, RunPage, check_page, page_entries, parse_sort

        key = parse_sort(sort)
        check_page(limit, offset, cursor)
        flt = RunFilter.of(project, status, tag, q, group, job_type)
        if limit is not None and key.kind == "field" and key.name == "created_at" and flt == RunFilter() and \
                index_enabled():
            page = self._newest_page(key, limit, cursor, offset)
            if page is not None:
                return page
        one = flt.tags[0] if len(flt.tags) == 1 else None
        entries = [e for e in self.catalog(flt.project, flt.status, one) if flt.keeps(e.info)]
        rows, total, nxt = page_entries(entries, key, limit, cursor, offset)
        return RunPage([e.info for e in rows], total, nxt, rows)

    def _newest_page(self, key: Any, limit: int, cursor: str | None, offset: int | None) -> Any:
        """A page of the runs by start time from the catalog's start times, checking only the page's runs
        (:mod:`tracker.read.index.runtable`, else :mod:`tracker.read.index.newest`); ``None`` when the catalog
        cannot tell (the caller lists it all). A run table that lists the runs there are (the runs folder
        unchanged since) spares listing the runs folder; runs added since (a few) are derived and placed
        among the others, runs removed since are left out."""
        from tracker.read.index.newest import Newest, StartKeys
        from tracker.read.index.runtable import RunTable
        from tracker.read.listing import RunPage, page_entries

        ids_seen: list[str] | None = None
        table = RunTable.open(self.path)
        if table is not None and not table.fresh(self.runs_dir):
            ids_seen = self.run_ids()
            page = self._newest_changed(table, ids_seen, key, limit, cursor, offset)
            if page is not False:
                return page
            table = None
        if table is not None:
            order = table.order(key.desc)
            try:
                rows, total, nxt = page_entries((), key, limit, cursor, offset,
                                                ordered=(order, StartKeys(order, table.created, table.ids)))
            except BaseException:
                table.close()
                raise
            entries = table.entries(rows, self._refresh_running)
            if entries is None:
                return None
            if ids_seen is None:
                ids_seen = table.ids if table.sorted else sorted(table.ids)
        else:
            ids_seen = self.run_ids() if ids_seen is None else ids_seen
            newest = Newest.open(self.path, ids_seen)
            if newest is None:
                return None
            try:
                ids, total, nxt = page_entries((), key, limit, cursor, offset, ordered=newest.order(key.desc))
            except BaseException:
                newest.close()
                raise
            entries = newest.entries(ids, self._refresh_running)
            if entries is None:
                return None
        page = RunPage([e.info for e in entries], total, nxt, entries)
        page.run_ids = ids_seen  # every run id (sorted): what `tracker runs` shortens ids among
        return page

    def _newest_changed(self, table: Any, ids_seen: list[str], key: Any, limit: int, cursor: str | None,
                        offset: int | None) -> Any:
        """:meth:`_newest_page` from a run table whose runs folder changed since (``ids_seen`` listed now): the
        runs added since derived (at most :data:`ADDED_AT_ONCE`) and placed by start time, the runs removed
        left out. ``False``: too many changes, or a run added that cannot be read (the caller lists as always)."""
        from tracker.read.index.newest import StartKeys, start_order
        from tracker.read.listing import RunPage, page_entries

        known = table.ids
        known_set, seen = set(known), set(ids_seen)
        added = [rid for rid in ids_seen if rid not in known_set]
        gone = {i for i, rid in enumerate(known) if rid not in seen} if len(known) + len(added) != len(seen) else set()
        if len(added) > ADDED_AT_ONCE:
            table.close()
            return False
        new = []
        for rid in added:
            try:
                new.append(self._derive_entry(rid)[0])
            except Exception:  # noqa: BLE001 - the whole listing reports it, as always
                table.close()
                return False
        n = len(known)
        if not new and not gone:
            order: Any = table.order(key.desc)
            ids, created = known, table.created
        else:
            inf = float("inf")
            ids = known + added
            created = table.created + [inf if e.info.created_at is None else e.info.created_at for e in new]
            order = start_order(created, ids, key.desc)
            if gone:
                order = [i for i in order if i not in gone]
        try:
            rows, total, nxt = page_entries((), key, limit, cursor, offset,
                                            ordered=(order, StartKeys(order, created, ids)))
        except BaseException:
            table.close()
            raise
        rows = list(rows)
        kept = table.entries([i for i in rows if i < n], self._refresh_running)
        if kept is None:
            return None
        found = iter(kept)
        entries = [next(found) if i < n else new[i - n] for i in rows]
        page = RunPage([e.info for e in entries], total, nxt, entries)
        page.run_ids = ids_seen
        return page

    def run_count(self) -> int:
        """How many runs the store has: from the run table while the runs folder is unchanged since it was
        written (:mod:`tracker.read.index.runtable`), else by listing the runs folder."""
        if index_enabled():
            from tracker.read.index.runtable import fresh_count

            n = fresh_count(self.path, self.runs_dir)
            if n is not None:
                return n
        return len(self.run_ids())

    def run_choices(self) -> dict[str, Any]:
        """What a runs list's filters and columns offer: projects, tags, statuses, groups, job types, config keys,
        metric names and the default metric column (:func:`tracker.read.listing.choices`), from the catalog."""
        from tracker.read.listing import choices

        return choices([e.info for e in self.catalog()])

    def catalog(self, project: str | None = None, status: str | None = None,
                tag: str | None = None, *, group: str | None = None, job_type: str | None = None,
                ids: list[str] | None = None) -> list[CatalogEntry]:
        """Every run's catalog entry (info, per-metric figures, records per schema), newest first.

        Read from ``<store>/index/catalog.idx`` where it still matches the
        run's files, derived again from the segments where it does not.

        :param ids: only these runs (a never-read store's newest first, :mod:`tracker.ui.runlist`): the
            catalog then keeps only them, until a listing of more.
        """
        # The size of each segment to read is noted when the listing begins, for every run it reads:
        # runs logging faster than this reader parses are read as they were, never chased.
        bounds: dict[str, dict[str, int]] = {}

        def note(ids: list[str]) -> None:
            bounds.update({rid: segment_sizes(self.runs_dir / rid) for rid in ids})

        if index_enabled():
            from tracker.read.index.runtable import describe, runs_dir_state

            # The runs folder as it was before listing it whole: the run table records it (no listing next time).
            listed = runs_dir_state(self.runs_dir) if ids is None else None

            def described(placed: Any, table: Any, kept: Any, whole: bool) -> None:
                describe(self.path, placed, table, kept, listed if whole else None, self._writable)

            entries = catalog_entries(self.path, self.run_ids() if ids is None else ids,
                                      lambda rid: self._derive_entry(rid, bounds.get(rid)),
                                      self._refresh_running, self._writable, self._unlisted, note, described)
        else:
            entries = []
            ids = self.run_ids() if ids is None else ids
            note(ids)
            for rid in ids:
                try:
                    view = self._view(rid, bounds.get(rid))
                    counts = view.schema_counts()
                    entries.append(CatalogEntry(view.info, view.metric_stats(), counts,
                                                artifacts=_artifact_figures(view, counts, bool(edit_paths(view.path)))))
                except StoreError as exc:
                    self._unlisted(rid, exc)
        out = [e for e in entries if info_matches(e.info, project, status, tag, group, job_type)]
        out.sort(key=lambda e: (e.info.created_at or 0.0, e.info.id), reverse=True)
        return out

    def registry(self) -> Any:
        """Every named artifact: versions, aliases, producers and consumers (:class:`tracker.read.registry.Registry`).

        Derived from the artifact figures of the run catalog, and kept warm in memory: later questions
        look only at what may have changed (:mod:`tracker.read.index.artifacts`).
        """
        from tracker.read.index.artifacts import warm_registry

        return warm_registry(self)

    #: The class of the views :meth:`run` returns (:mod:`tracker.store` gives one with the capabilities' methods).
    view_class: type[RunView]

    def dataframe(self, project: str | None = None, status: str | None = None, library: str = "pandas") -> Any:
        """One row per run: RunInfo fields, ``config.KEY``, ``summary.KEY`` and ``metric.NAME.last|min|max|count``.

        Read from the run catalog; ``library`` as for :meth:`RunView.dataframe`.
        """
        from tracker.read.frames import run_frame

        return run_frame(self, project, status, library)

    def _view(self, run_id: str, bounds: dict[str, int] | None = None) -> RunView:
        view = self.view_class(self.path, run_id, host=self._host, writable=self._writable)
        if bounds:
            view._bounds.update(bounds)
        return view

    def _unlisted(self, run_id: str, exc: Exception) -> None:
        if not isinstance(exc, StoreError):
            raise exc
        warnings.warn(f"tracker: run {run_id} is not listed: {exc}", TrackerWarning, stacklevel=4)

    def _derive_entry(self, run_id: str, bounds: dict[str, int] | None = None) -> tuple[CatalogEntry, dict[str, Any]]:
        view = self._view(run_id, bounds)
        # The folders' state first: a change made while deriving makes the entry stale, never wrong.
        derived_ns = time.time_ns()
        dir_state, edits_state = folder_state(view.path)
        ixs = view._indexes(set())
        info = view.info
        segs = {ix.path.name: [ix.ino, ix.size, ix.mtime_ns, ix.offset, ix.last_start, ix.last_crc] for ix in ixs}
        edits = {}
        for p in edit_paths(view.path):
            st = os.stat(p)
            edits[p.name] = [st.st_ino, st.st_size, st.st_mtime_ns]
        counts: dict[str, int] = {}
        for ix in ixs:
            for name, m in ix.meta.items():
                counts[name] = counts.get(name, 0) + m["n"]
        entry = CatalogEntry(info, combine_stats([ix.stats for ix in ixs]), counts,
                             artifacts=_artifact_figures(view, counts, bool(edits)))
        # A writer on another host that never finished is judged by a timeout of the reader's
        # configuration: such a run's status is derived again at each listing, like a running one's.
        here = hostname()
        recheck = any(s.finish is None and s.facts().get("host") != here for s in view._ends)
        return entry, {"dir": dir_state, "edits_dir": edits_state, "segs": segs, "edits": edits,
                       "recheck": recheck, "derived_ns": derived_ns}

    def _refresh_running(self, run_id: str, entry: CatalogEntry) -> CatalogEntry:
        # Its files are unchanged, but its writer may have died since: derive the status again.
        return CatalogEntry(self._view(run_id).info, entry.metrics, entry.schemas, artifacts=entry.artifacts)

    def run(self, ref: str) -> RunView:
        """The run whose id is ``ref`` or starts with it (like git), else whose name is ``ref``.

        :raises RunNotFound: no match, or several (the message lists them).
        """
        run_id = resolve_run_ref(ref, self.run_ids(), self._named(ref), f"store {self.path}")
        return self._view(run_id)

    def _named(self, ref: str) -> Callable[[list[str]], list[str]]:
        def named(ids: list[str]) -> list[str]:
            if index_enabled():
                # Names from the catalog: one listing instead of reading every run's ends.
                return [e.info.id for e in self.catalog() if e.info.name == ref and e.info.id in ids]
            return [i for i in ids if self._name_of(i) == ref]
        return named

    def _name_of(self, run_id: str) -> str | None:
        """The run's name, or ``None`` for a run that cannot be read (it never hides a match)."""
        try:
            return self._view(run_id).info.name
        except StoreError:
            return None


def _artifact_figures(view: RunView, counts: dict[str, int], has_edits: bool) -> dict[str, Any] | None:
    """What run ``view`` adds to the artifact registry (:mod:`tracker.read.registry`), for its catalog entry."""
    from tracker.read.registry import ARTIFACT, ARTIFACT_USE, run_figures

    if ARTIFACT not in counts and ARTIFACT_USE not in counts and not has_edits:
        return None
    edits: list[dict[str, Any]] = []
    if has_edits:
        from tracker.read.edits import read_edits

        edits = read_edits(view.path)
    return run_figures(view, view.info.project, counts, edits)


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


Store.view_class = RunView
