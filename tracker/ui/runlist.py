"""``GET /api/runs``: a page of the runs list, the runs the filters keep, the next cursor and the choices.

The store answers the question (:meth:`tracker.Store.runs` semantics, :mod:`tracker.read.listing`): over a
folder, the server keeps the catalog's entries (:class:`RunList`) and each sorted order it was asked for, so
a page costs its rows; over PostgreSQL, SQL answers it (:mod:`tracker.team.listing`).

A folder's catalog is checked against the runs' files at each request while that takes under
:data:`QUICK_S`; a bigger store's is checked again in the background, at most every few times what a
check takes, and requests answer from the last one (so a page of a 100,000-run store costs milliseconds
and shows runs added a few seconds ago). A store never read before is listed newest runs first (by the
run folder's time): its catalog is built in growing chunks in the background, and each answer says how
far it got (``building: {done, total}``).

A sort is a ``lexsort`` of the version's sort columns (:mod:`tracker.read.sortcols`); the thread that reads
a big store's catalog makes the columns of a new version before publishing it (every field, the most used
config keys and metrics, the sorts asked before), and its choices, so the first page of a sort not asked
yet costs a ``lexsort`` and its rows, not a pass over every run.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tracker.core.errors import TrackerError
from tracker.read.listing import ListingError, RunFilter, SortKey, choices, page_entries, parse_sort
from tracker.ui import parts
from tracker.ui.params import BadRequest, int_param, names_param, status_param

#: A catalog checked within this many seconds is checked again at every request (answers exact at once).
QUICK_S = 0.3
#: A never-read store lists its newest runs first once it has more than this many: the first chunk built.
FIRST_CHUNK = 200
#: A store of more runs than this answers its first page of newest runs before reading its whole catalog.
BIG = 5_000
#: Sorted orders kept per catalog version (filters x sorts a page asked for).
ORDERS_KEPT = 6


def _release_freed_memory() -> None:
    """Give the memory a catalog read freed back to the system (glibc's ``malloc_trim``, on Linux).

    A read of a big catalog frees large buffers that glibc's heap keeps: at 100,000 runs a server whose first
    read also wrote the run table held 748 MB where 424 MB were in use. Elsewhere, nothing.
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        pass


class RunList:
    """A folder store's catalog as the dashboard keeps it: entries, their sorted orders, the choices."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self._lock = threading.Lock()
        self._count_lock = threading.Lock()
        self._snap: tuple[Any, list[Any]] | None = None  # (version, entries newest first)
        self._checked = 0.0  # when the snapshot was checked against the files
        self._took = 0.0  # how long that took
        self._worker: threading.Thread | None = None
        self._orders: OrderedDict[tuple, tuple[list[Any], list[Any]]] = OrderedDict()
        self._choices: tuple[Any, dict[str, Any]] | None = None
        self._columns: tuple[Any, Any] | None = None  # (version, its sort columns)
        self._serving = 0  # requests answering from the entries (or waiting for them) now
        #: ``{"done", "total"}`` while a never-read store's catalog is being built, else ``None``.
        self.building: dict[str, int] | None = None
        self.error: BaseException | None = None
        self._first_asked = False

    # --- the entries ----------------------------------------------------------------------------

    def ready(self, start: bool = True) -> tuple[Any, list[Any]] | None:
        """The entries once a catalog was read (:meth:`entries`); before that ``None``, and a first full read
        starts in the background (a page of the newest runs needs none: :meth:`tracker.Store.runs` reads
        the catalog's start times). A never-read store answers its first chunk (:meth:`entries`)."""
        if self._snap is not None:
            return self.entries()
        if not self._first_asked:
            self._first_asked = True
            count = self.store.run_count() if hasattr(self.store, "run_count") else len(self.store.run_ids())
            if count <= BIG or self._never_read() is not None:
                return self.entries()
        if start:
            self.start()
        return None if self._snap is None else self.entries()

    def start(self) -> None:
        """Read the whole catalog in the background, unless it is read or being read."""
        worker = self._worker
        if self._snap is None and (worker is None or not worker.is_alive()):  # (a reading worker holds the lock)
            with self._lock:
                if self._snap is None and (self._worker is None or not self._worker.is_alive()):
                    self._start(self._check_locked)

    def entries(self) -> tuple[Any, list[Any]]:
        """``(version, entries newest first)``: the catalog as last checked (see the module's docstring)."""
        snap = self._snap
        if snap is None:
            with self._lock:
                if self._snap is None:
                    ids = self._never_read()
                    if ids is not None:
                        self._start(self._build, ids)
                        while self._snap is None and self._worker is not None and self._worker.is_alive():
                            time.sleep(0.01)
                        if self._snap is None:
                            self._raise()
                    else:
                        self._check()
            return self._snap  # type: ignore[return-value]
        if self.building is not None:
            return snap
        age = time.monotonic() - self._checked
        if self._took < QUICK_S:
            with self._lock:
                self._check()
            return self._snap  # type: ignore[return-value]
        if age > max(1.0, 3 * self._took) and (self._worker is None or not self._worker.is_alive()):
            with self._lock:
                if self._worker is None or not self._worker.is_alive():
                    self._start(self._check_locked)
        return snap

    def _raise(self) -> None:
        err = self.error
        self.error = None
        if err is not None:
            raise err
        raise TrackerError("the runs list could not be read")

    def _start(self, target: Any, *args: Any) -> None:
        self._worker = threading.Thread(target=self._guard, args=(target, *args), daemon=True,
                                        name="tracker-runlist")
        self._worker.start()

    def _guard(self, target: Any, *args: Any) -> None:
        try:
            target(*args)
        except Exception as exc:  # noqa: BLE001 - kept for the request that waits on it
            self.error = exc
            self.building = None

    def _check_locked(self) -> None:
        with self._lock:
            later = self._check(prepare=True)
        if later:  # the requests that waited for this read answered first (a few seconds at most)
            deadline = time.monotonic() + 5.0
            while self._serving and time.monotonic() < deadline:
                time.sleep(0.02)
            self._prepare()
            _release_freed_memory()

    @contextmanager
    def serving(self) -> Iterator[None]:
        """Around a request that answers from the entries: a first read that it waits for publishes them before
        making their sort columns, and makes those once it answered."""
        with self._count_lock:
            self._serving += 1
        try:
            yield
        finally:
            with self._count_lock:
                self._serving -= 1

    def _check(self, prepare: bool = False) -> bool:
        """Check the catalog against the runs' files now (the caller holds the lock); ``prepare``: in a thread
        of its own, a new version's sort columns are made before it is published (:meth:`_prepared`), so
        that its first sorts find them, unless a request waits for this first read: then after (``True``:
        the caller makes them once it let the lock go)."""
        from tracker.read.index import gc_paused

        start = time.monotonic()
        with gc_paused():
            entries = self.store.catalog()
        version = self._version_of(entries)
        later = False
        if prepare and (self._snap is None or self._snap[0] != version):
            if self._snap is None and self._serving:
                later = True
            else:  # before the snapshot: its first requests find its columns and choices made
                self._columns = (version, self._prepared(entries))
                self.choices(version, entries)
        if len(entries) > BIG:  # what reading a big catalog (and making its columns) freed
            _release_freed_memory()
        self._publish(entries, start, version)
        return later

    def _publish(self, entries: list[Any], start: float, version: Any = None) -> None:
        version = self._version_of(entries) if version is None else version
        if self._snap is None or self._snap[0] != version:
            self._snap = (version, entries)
        self._checked = time.monotonic()
        self._took = self._checked - start

    def _version_of(self, entries: list[Any]) -> Any:
        """What changes whenever the listing does: the catalog file as written, the runs listed, running runs."""
        from tracker.read.index.catalog import catalog_file

        try:
            st = os.stat(catalog_file(self.store.path))
            written: Any = (st.st_ino, st.st_mtime_ns, st.st_size)
        except OSError:
            written = id(entries)
        running = tuple((e.info.id, e.info.status, e.info.records, e.info.last_step, e.info.ended_at)
                        for e in entries if e.info.status == "running")
        return (written, len(entries), running, self.building is not None and self.building["done"])

    def _never_read(self) -> list[str] | None:
        """A never-read store's run ids, newest folder first, when it has more than :data:`FIRST_CHUNK`."""
        from tracker.read.index import index_enabled
        from tracker.read.index.catalog import catalog_file

        if not index_enabled() or not hasattr(self.store, "runs_dir") or catalog_file(self.store.path).exists():
            return None
        ids = self.store.run_ids()
        if len(ids) <= FIRST_CHUNK:
            return None
        runs_dir = str(self.store.runs_dir)

        def mtime(rid: str) -> float:
            try:
                return os.stat(f"{runs_dir}/{rid}").st_mtime
            except OSError:
                return 0.0

        return sorted(ids, key=lambda r: (mtime(r), r), reverse=True)

    def _build(self, ids: list[str]) -> None:
        """Build the catalog of a never-read store in growing chunks, newest runs first, publishing each."""
        from tracker.read.index import gc_paused

        done, size = 0, FIRST_CHUNK
        self.building = {"done": 0, "total": len(ids)}
        while done < len(ids):
            done = min(len(ids), done + size)
            size *= 4
            start = time.monotonic()
            with gc_paused():
                entries = self.store.catalog(ids=ids[:done])
            self.building = {"done": done, "total": len(ids)} if done < len(ids) else None
            self._publish(entries, start)
        self._took = 0.0  # checked next time like any store (the first full check tells its cost)
        self._prepare()
        _release_freed_memory()

    # --- what the requests ask ---------------------------------------------------------------------

    def columns(self, version: Any, entries: list[Any]) -> Any:
        """The sort columns of a version (:class:`tracker.read.sortcols.Columns`, made once per version)."""
        hit = self._columns
        if hit is not None and hit[0] == version:
            return hit[1]
        from tracker.read.sortcols import Columns

        cols = Columns(entries)
        if hit is not None:
            cols.asked = hit[1].keys()  # made again ahead, in the background, for the new version
        self._columns = (version, cols)
        return cols

    def ordered(self, version: Any, entries: list[Any], flt: RunFilter, key: SortKey) -> tuple[Any, Any]:
        """The entries the filter keeps, in the sort's order, with their order keys (kept per version): a
        ``lexsort`` of the version's sort columns (:mod:`tracker.read.sortcols`)."""
        k = (version, flt, key)
        hit = self._orders.get(k)
        if hit is not None:
            self._orders.move_to_end(k)
            return hit
        cols = self.columns(version, entries)
        got = tuple(cols.order(key, None if flt == RunFilter() else cols.kept(flt)))
        self._orders[k] = got
        while len(self._orders) > ORDERS_KEPT:
            self._orders.popitem(last=False)
        return got

    def _prepared(self, entries: list[Any]) -> Any:
        """The sort columns of ``entries`` made ahead (:meth:`tracker.read.sortcols.Columns.prepare`: every
        field, the most used config keys and metrics, and the sorts asked of the previous version)."""
        from tracker.read.index import gc_paused
        from tracker.read.sortcols import Columns

        cols = Columns(entries)
        hit = self._columns
        cols.asked = hit[1].keys() if hit is not None else []
        with gc_paused():
            cols.prepare(cols.asked)
        return cols

    def _prepare(self) -> None:
        """The sort columns of the version published last, made ahead (in the thread that read it)."""
        from tracker.read.index import gc_paused

        snap = self._snap
        if snap is not None:
            cols = self.columns(*snap)
            with gc_paused():
                cols.prepare(cols.asked)
                self.choices(*snap)

    def choices(self, version: Any, entries: list[Any]) -> dict[str, Any]:
        """The filters' and columns' choices of a version (computed once per version)."""
        hit = self._choices
        if hit is not None and hit[0] == version:
            return hit[1]
        from tracker.read.index import gc_paused

        with gc_paused():
            doc = choices([e.info for e in entries])
        self._choices = (version, doc)
        return doc


class TeamChoices:
    """The team database's choices and sorted orders, asked again only when its change key moved.

    A database of more than :data:`BIG` runs gets its choices in the background (its own connection), so a
    page never waits on them: the last ones are answered meanwhile (none at first: ``choices_pending``).
    """

    def __init__(self) -> None:
        self._hit: tuple[Any, dict[str, Any]] | None = None
        self._worker: threading.Thread | None = None
        self._lock = threading.Lock()
        self._orders: OrderedDict[tuple, tuple[list[str], list[Any]]] = OrderedDict()

    def get(self, store: Any, key: Any) -> dict[str, Any] | None:
        """The choices for change key ``key`` (``None``: not known yet, being read)."""
        hit = self._hit
        if hit is not None and hit[0] == key:
            return hit[1]
        if not hasattr(store, "url") or store.run_count() <= BIG:
            doc = store.run_choices()
            self._hit = (key, doc)
            return doc
        with self._lock:
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._read, args=(store, key), daemon=True,
                                                name="tracker-team-choices")
                self._worker.start()
        return hit[1] if hit is not None else None

    def _read(self, store: Any, key: Any) -> None:
        other = type(store)(store.url, store._host, timeout=store.timeout)
        try:
            self._hit = (key, other.run_choices())
        except Exception:  # noqa: BLE001 - the next request asks again
            pass
        finally:
            other.conn.close()

    def order(self, store: Any, change: Any, flt: RunFilter, key: SortKey) -> tuple[list[str], list[Any]]:
        """The whole order of a sort no index serves, read once per change of the database."""
        k = (change, flt, key)
        hit = self._orders.get(k)
        if hit is None:
            hit = store.run_order(project=flt.project, status=flt.status, tag=list(flt.tags) or None, q=flt.q,
                                  group=flt.group, job_type=flt.job_type, sort=key.text)
            self._orders[k] = hit
            while len(self._orders) > ORDERS_KEPT:
                self._orders.popitem(last=False)
        else:
            self._orders.move_to_end(k)
        return hit


class _Listed:
    """A run's info as the listing functions take it (figures read apart, when asked for)."""

    __slots__ = ("info",)
    metrics: dict[str, Any] = {}  # noqa: RUF012 - shared and never written: a sort on a metric finds none

    def __init__(self, info: Any) -> None:
        self.info = info


def query_of(request: Any) -> tuple[RunFilter, SortKey, int | None, str | None, int | None]:
    """The filters, sort, limit, cursor and offset of a ``GET /api/runs`` request.

    :raises BadRequest: a parameter that cannot be used (its name and what was expected).
    """
    from tracker.read.listing import MAX_LIMIT

    q = request.query_params
    flt = RunFilter.of(q.get("project") or None, status_param(request), [t for t in q.getlist("tag") if t],
                       q.get("q") or None, q.get("group") or None, q.get("job_type") or None)
    limit = int_param(request, "limit", 0, 1, MAX_LIMIT) or None
    offset = int_param(request, "offset", -1, 0, 10**9)
    cursor = q.get("cursor") or None
    try:
        key = parse_sort(q.get("sort") or None)
        if cursor is not None and offset >= 0:
            raise ListingError("cursor and offset: give one of them")
    except ListingError as exc:
        raise BadRequest(str(exc)) from None
    return flt, key, limit, cursor, offset if offset >= 0 else None


def runs_doc(api: Any, request: Any) -> dict[str, Any]:
    """The answer of ``GET /api/runs`` (before its ETag): rows, ``total``, ``matched``, ``next``, choices."""
    flt, key, limit, cursor, offset = query_of(request)
    stats = names_param(request, "stats") or []
    if len(stats) > 50:
        raise BadRequest(f"stats: expected at most 50 metric names, given {len(stats)}")
    store = api.store
    building = None
    folder = hasattr(store, "catalog") and hasattr(store, "runs_dir")
    snap = api.runlist.ready(start=False) if folder else None
    if folder and snap is None and limit is not None and key.kind == "field" and key.name == "created_at" \
            and flt == RunFilter():
        # The first request of a big store: its newest runs from the catalog's start times, while the whole
        # catalog is read in the background; the choices come with the next answer.
        try:
            page = store.runs(sort=key.text, limit=limit, cursor=cursor, offset=offset)
        except ListingError as exc:
            raise BadRequest(str(exc)) from None
        infos, matched, nxt, total = list(page), page.total, page.next, page.total
        doc = {**choices([]), "choices_pending": True}
        api.runlist.start()  # after this page: the whole catalog, read meanwhile, answers the next questions
        ents = page.entries or []
        plain = {e.info.id for e in ents if e.finite}
        alerts = {e.info.id: e.schemas.get("alert", 0) for e in ents}
        figures = {e.info.id: e.metrics for e in ents} if stats else {}
    elif folder:
        runlist = api.runlist
        with runlist.serving():
            version, entries = snap if snap is not None else runlist.entries()
            building = runlist.building
            ordered = runlist.ordered(version, entries, flt, key)
            try:
                rows, matched, nxt = page_entries(ordered[0], key, limit, cursor, offset, ordered=ordered)
            except ListingError as exc:
                raise BadRequest(str(exc)) from None
        doc = dict(runlist.choices(version, entries))
        total = len(entries)
        infos = [e.info for e in rows]
        plain = {e.info.id for e in rows if e.finite}
        alerts = {e.info.id: e.schemas.get("alert", 0) for e in rows}
        figures = {e.info.id: e.metrics for e in rows} if stats or request.query_params.get("default") == "1" \
            else {}
    elif not hasattr(store, "run_choices"):
        # A reader of the protocol without pages of its own (e.g. a store over HTTP): paged here, over its infos.
        every = [_Listed(i) for i in store.runs()]
        kept = [e for e in every if flt.keeps(e.info)]
        try:
            rows, matched, nxt = page_entries(kept, key, limit, cursor, offset)
        except ListingError as exc:
            raise BadRequest(str(exc)) from None
        infos, total = [e.info for e in rows], len(every)
        doc = dict(choices([e.info for e in every]))
        plain, alerts = set(), {}
        want = stats or request.query_params.get("default") == "1"
        figures = store.figures([i.id for i in infos]) if want and infos and hasattr(store, "figures") else {}
    else:
        from tracker.team.listing import indexed

        change = store.change_key() if hasattr(store, "change_key") else None
        try:
            if limit is not None and hasattr(store, "run_order") and not indexed(key, flt):
                # A sort no index serves: its whole order read once per change of the database, pages from it.
                order = api.team_choices.order(store, change, flt, key)
                ids, matched, nxt = page_entries(order[0], key, limit, cursor, offset, ordered=order)
                infos = store.infos_of(ids)
            else:
                page = store.runs(project=flt.project, status=flt.status, tag=list(flt.tags), q=flt.q,
                                  group=flt.group, job_type=flt.job_type, sort=key.text, limit=limit, cursor=cursor,
                                  offset=offset)
                infos, matched, nxt = list(page), page.total, page.next
        except ListingError as exc:
            raise BadRequest(str(exc)) from None
        got = api.team_choices.get(store, change)
        doc = dict(got) if got is not None else {**choices([]), "choices_pending": True}
        total = matched if flt == RunFilter() else \
            (store.run_count() if hasattr(store, "run_count") else len(store.run_ids()))
        plain, alerts = set(), {}
        want = stats or request.query_params.get("default") == "1"
        figures = store.figures([i.id for i in infos]) if want and infos and hasattr(store, "figures") else {}
    # default=1: the statistics of the default metric come in the same answer (one load, not two).
    if request.query_params.get("default") == "1" and doc["default_metric"] and doc["default_metric"] not in stats:
        stats = [*stats, doc["default_metric"]]
    from tracker.core.text import flatten

    out_rows = []
    for info in infos:
        row = parts.info_json(info)
        row["config_flat"] = dict(flatten(info.config or {}))
        row = row if info.id in plain else parts.strict(row)
        row["alerts"] = alerts.get(info.id, 0)
        if stats:
            row["stats"] = parts.strict(parts.catalog_stats(figures.get(info.id, {}), stats))
        out_rows.append(row)
    doc.update(runs=out_rows, total=total, matched=matched, next=nxt, sort=key.text, store=str(store.path))
    if offset is not None:
        doc["offset"] = offset
    if building is not None:
        doc["building"] = dict(building)
    if not total and getattr(store, "empty_hint", None):
        doc["hint"] = store.empty_hint  # a team database no run has reached yet: how runs get there
    return doc


__all__ = ["FIRST_CHUNK", "QUICK_S", "RunList", "TeamChoices", "query_of", "runs_doc"]
