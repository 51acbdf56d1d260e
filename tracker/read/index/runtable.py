"""The catalog's run table in a small file of its own: run ids and start times, read with one read.

A page of the newest runs needs which runs there are and when each started; the catalog holds that in its
header (every run's id and file names: megabytes of JSON at 100,000 runs) and its start-time column, and
the runs folder holds it as 100,000 folder names to list. ``<store>/index/runs.idx`` is written next to
the catalog each time the catalog is (or when it is missing): the ids and start times, where each run's
rows lie in the catalog's columns, and two facts to trust it by:

- the catalog file it describes (inode, modification time, size): another catalog makes it stale;
- the runs folder as it was just before the listing that made the catalog (inode, modification time),
  kept only when the listing covered every run folder and that time lay :data:`~catalog.SETTLE_NS`
  before the listing. A run folder added or removed since changes the runs folder's time (by more than
  a coarse clock's tick, since the old time was settled), so while it holds the table lists exactly the
  runs there are: the first page is found without listing the runs folder (:meth:`RunTable.fresh`).

Only the page's runs are then checked against their files and parsed (as :mod:`.newest` does), from the
catalog's columns read at the places this table gives; a run that does not match makes the caller list
the store as always. The file is derived data like the rest: deleting it changes no answer.
"""

from __future__ import annotations

import os
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from tracker.read.index import container
from tracker.read.index.catalog import (
    _EDIT_COLS,
    _RECHECK,
    _RUN_COLS,
    _SEG_COLS,
    SETTLE_NS,
    CatalogEntry,
    Table,
    catalog_file,
)
from tracker.read.index.newest import start_order
from tracker.read.index.segments import INDEX_DIR, Writable

RUNTABLE = "runs.idx"
LAYOUT = 2  # 2: the newest-first order
#: The catalog arrays a page's entries are read from.
_TEXTS = ("info", "metrics", "artifacts")


def runtable_file(store: Path) -> Path:
    return store / INDEX_DIR / RUNTABLE


def runs_dir_state(runs_dir: Path | str) -> list[int] | None:
    """``[inode, mtime_ns, now_ns]`` of the runs folder, taken before it is listed (``None``: no folder)."""
    now = time.time_ns()
    try:
        st = os.stat(runs_dir)
    except OSError:
        return None
    return [st.st_ino, st.st_mtime_ns, now]


def write(store: Path, placed: container.Placed, ids: list[str], created: list[float | None],
          names: list[tuple[list[str], list[str]]], listed: list[int] | None, writable: Writable) -> None:
    """Write the run table of the catalog ``placed`` (its runs ``ids`` in its order, their start times and
    segment and edit file names), with the runs folder's state ``listed`` when it was listed whole."""
    from array import array
    from itertools import accumulate

    inf = float("inf")
    seg_at = list(accumulate((len(s) for s, _ in names), initial=0))
    edit_at = list(accumulate((len(e) for _, e in names), initial=0))
    texts = [orjson.dumps([s, e]) for s, e in names]
    settled = listed is not None and listed[1] <= listed[2] - SETTLE_NS
    header = {"layout": LAYOUT, "order": sys.byteorder, "catalog": list(placed.identity), "base": placed.base,
              "columns": {k: list(v) for k, v in placed.arrays.items()}, "count": len(ids),
              "sorted": all(a < b for a, b in zip(ids, ids[1:], strict=False)),
              "runs_dir": listed[:2] if settled and listed is not None else None}
    starts = [inf if c is None else c for c in created]
    arrays = {"ids": "\n".join(ids).encode(), "created": array("d", starts),
              "newest": array("Q", start_order(starts, ids, True)),
              "seg_at": array("Q", seg_at), "edit_at": array("Q", edit_at), "names": b"".join(texts),
              "names_at": array("Q", accumulate(map(len, texts), initial=0))}
    writable.attempt(lambda: container.write(runtable_file(store), header, arrays))


def fresh_count(store: Path, runs_dir: Path | str) -> int | None:
    """How many runs the store has, when its run table describes its catalog and lists the runs there are
    (:meth:`RunTable.fresh`); else ``None``. Reads the table's header only."""
    try:
        with container.Reader(runtable_file(store)) as reader:
            h = reader.header
            st = os.stat(catalog_file(store))
            if h.get("layout") != LAYOUT or h.get("catalog") != [st.st_ino, st.st_mtime_ns, st.st_size] or \
                    h.get("runs_dir") is None or type(h.get("count")) is not int:
                return None
            st = os.stat(runs_dir)
            return h["count"] if [st.st_ino, st.st_mtime_ns] == h["runs_dir"] else None
    except (OSError, container.Damaged):
        return None


def holds(store: Path, identity: tuple[int, int, int], listed: list[int] | None) -> bool:
    """Whether the run table on disk describes the catalog ``identity`` (and, given ``listed``, records it)."""
    try:
        with container.Reader(runtable_file(store)) as reader:
            h = reader.header
            if h.get("layout") != LAYOUT or h.get("catalog") != list(identity):
                return False
            if listed is not None and listed[1] <= listed[2] - SETTLE_NS and h.get("runs_dir") != listed[:2]:
                return False  # a runs folder state to record (the runs folder changed, and settled, since)
            for key in reader.arrays:  # a damaged array: written again
                reader.verify(key)
            return True
    except (OSError, container.Damaged):
        return False


class RunTable:
    """The run table as read: ``ids`` (the catalog's order), ``created`` (``inf``: unknown), ``count``."""

    def __init__(self, store: Path, reader: container.Reader, ids: list[str], created: list[float]) -> None:
        self.store = store
        self.reader = reader
        self.ids = ids
        self.created = created
        h = reader.header
        self.sorted: bool = h.get("sorted") is True
        self._catalog: tuple[int, int, int] = tuple(h["catalog"])  # type: ignore[assignment]
        self._runs_dir = h.get("runs_dir")
        self._base: int = h["base"]
        self._columns: dict[str, list[int]] = h["columns"]
        #: the positions of the runs newest first (ties by id, descending; runs without a start time last)
        self.newest: Any = None

    def order(self, desc: bool) -> Any:
        """The positions of the runs in start-time order (:func:`.newest.start_order`; newest first: as kept)."""
        if desc and self.newest is not None:
            return self.newest
        return start_order(self.created, self.ids, desc)

    @classmethod
    def open(cls, store: Path) -> RunTable | None:
        """The run table of ``store`` when it describes the catalog there now; else ``None``.

        The file stays open until :meth:`entries` (or :meth:`close`).
        """
        try:
            reader = container.Reader(runtable_file(store))
        except (OSError, container.Damaged):
            return None
        try:
            h = reader.header
            st = os.stat(catalog_file(store))
            if h.get("layout") != LAYOUT or h.get("order") != sys.byteorder or \
                    h.get("catalog") != [st.st_ino, st.st_mtime_ns, st.st_size] or type(h.get("base")) is not int \
                    or type(h.get("columns")) is not dict:
                reader.close()
                return None
            n = h.get("count")
            raw = bytes(reader.read("ids"))
            ids = raw.decode().split("\n") if n else []
            created = memoryview(reader.read("created")).cast("d").tolist()
            newest = memoryview(reader.read("newest")).cast("Q")
            if len(ids) != n or len(created) != n or len(newest) != n:
                reader.close()
                return None
        except (OSError, container.Damaged, UnicodeDecodeError, TypeError, ValueError):
            reader.close()
            return None
        table = cls(store, reader, ids, created)
        table.newest = newest
        return table

    def close(self) -> None:
        self.reader.close()

    def fresh(self, runs_dir: Path | str) -> bool:
        """Whether the runs folder is as it was when the table's catalog listed it whole (no run added or
        removed since: see the module's docstring)."""
        if self._runs_dir is None:
            return False
        try:
            st = os.stat(runs_dir)
        except OSError:
            return False
        return [st.st_ino, st.st_mtime_ns] == self._runs_dir

    def entries(self, rows: list[int], refresh_running: Callable[[str, CatalogEntry], CatalogEntry]
                ) -> list[CatalogEntry] | None:
        """The entries of the runs at positions ``rows`` (a page), each checked against its files; ``None`` when
        one does not match, or the catalog is no longer the one described."""
        try:
            fd = os.open(catalog_file(self.store), os.O_RDONLY)
        except OSError:
            self.close()
            return None
        try:
            st = os.fstat(fd)
            if (st.st_ino, st.st_mtime_ns, st.st_size) != self._catalog:
                return None
            table = self._table(fd, rows)
            runs_dir = str(self.store / "runs")
            now = time.time_ns()
            out = []
            for j, i in enumerate(rows):
                rid = self.ids[i]
                if not table.check(j, f"{runs_dir}/{rid}", now):
                    return None
                entry = table.entry(j)
                if entry.info.id != rid:
                    return None
                if entry.info.status == "running" or table.rc[5][j] & _RECHECK:  # judged again at each listing
                    entry = refresh_running(rid, entry)
                out.append(entry)
            return out
        except (OSError, container.Damaged, KeyError, IndexError, TypeError, ValueError, struct.error):
            return None
        finally:
            os.close(fd)
            self.close()

    def _table(self, fd: int, rows: list[int]) -> Table:
        """A :class:`~.catalog.Table` of the runs at ``rows`` only, read from the catalog at the table's places."""
        reader, base, cols = self.reader, self._base, self._columns

        def ints(key: str, code: str, start: int, count: int) -> list[int]:
            off, nbytes = cols[key]
            if count == 0:
                return []
            if (start + count) * 8 > nbytes:
                raise ValueError(f"catalog array {key} is shorter than the run table says")
            data = os.pread(fd, 8 * count, base + off + 8 * start)
            return list(struct.unpack(f"={count}{code}", data))

        def text(key: str, start: int, end: int) -> bytes:
            off, nbytes = cols[key]
            if not 0 <= start <= end <= nbytes:
                raise ValueError(f"catalog array {key} is shorter than the run table says")
            return os.pread(fd, end - start, base + off + start)

        runs, rc = [], [[] for _ in _RUN_COLS]
        sc: list[list[int]] = [[] for _ in _SEG_COLS]
        ec: list[list[int]] = [[] for _ in _EDIT_COLS]
        blobs: dict[str, list[bytes]] = {k: [] for k in _TEXTS}
        for i in rows:
            a, b = memoryview(reader.read_bytes("names_at", 8 * i, 16)).cast("Q")
            seg_names, edit_names = orjson.loads(reader.read_bytes("names", a, b - a))
            runs.append([self.ids[i], seg_names, edit_names])
            for col, (key, code) in zip(rc, _RUN_COLS, strict=True):
                col += ints(key, code, i, 1)
            s = memoryview(reader.read_bytes("seg_at", 8 * i, 8)).cast("Q")[0]
            e = memoryview(reader.read_bytes("edit_at", 8 * i, 8)).cast("Q")[0]
            for col, (key, code) in zip(sc, _SEG_COLS, strict=True):
                col += ints(key, code, s, len(seg_names))
            for col, (key, code) in zip(ec, _EDIT_COLS, strict=True):
                col += ints(key, code, e, len(edit_names))
            for key in _TEXTS:
                lo, hi = ints(f"{key}_at", "Q", i, 2)
                blobs[key].append(text(key, lo, hi))
        at: dict[str, list[int]] = {}
        for key in _TEXTS:
            pos = [0]
            for blob in blobs[key]:
                pos.append(pos[-1] + len(blob))
            at[key] = pos
        return Table(runs, rc, sc, ec, b"".join(blobs["info"]), at["info"], b"".join(blobs["metrics"]),
                     at["metrics"], b"".join(blobs["artifacts"]), at["artifacts"])


def describe(store: Path, placed: container.Placed | None, table: Any, kept: list[Any] | None,
             listed: list[int] | None, writable: Writable) -> None:
    """Write the run table of the catalog just written (``placed``, its rows ``kept``) or of the catalog as
    read (``table``, whose reader's facts it keeps) when the table on disk does not describe it."""
    if kept is not None and placed is not None:
        write(store, placed, [k.id for k in kept], [k.created for k in kept],
              [(k.seg_names, k.edit_names) for k in kept], listed, writable)
    elif table is not None and getattr(table, "placed", None) is not None and table.created is not None:
        if holds(store, table.placed.identity, listed):
            return
        write(store, table.placed, [r[0] for r in table.runs],
              [None if c == float("inf") else c for c in table.created], [(r[1], r[2]) for r in table.runs],
              listed, writable)


__all__ = ["RUNTABLE", "RunTable", "describe", "fresh_count", "runs_dir_state", "runtable_file", "write"]
