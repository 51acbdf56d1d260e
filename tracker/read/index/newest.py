"""The newest runs of a store from its catalog file, without checking or parsing every run's entry.

A run's start time never changes, so the order of a list sorted by
``created_at`` with no filter depends only on which runs are there and on the
start times the catalog keeps as a column (``created``). :class:`Newest` reads
that column and the run table (not the runs' JSON texts), sorts, and checks and
parses only the entries of the page shown; a run added, removed, or an entry of
the page that no longer matches its files gives ``None`` and the caller lists the
whole catalog, as always. ``tracker runs`` at 100,000 runs costs its page this way.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

from tracker.core.records import RUNINFO_FIELDS
from tracker.read.index import container
from tracker.read.index.catalog import (
    _EDIT_COLS,
    _RECHECK,
    _RUN_COLS,
    _SEG_COLS,
    LAYOUT,
    CatalogEntry,
    Table,
    _ints,
    catalog_file,
    decode_info,
)

_MISSING, _NUMBER = 3, 0


class Newest:
    """The catalog's run table and start times (see the module's docstring)."""

    def __init__(self, store: Path, table: Table, created: list[float], reader: container.Reader) -> None:
        self.store = store
        self.table = table
        self.created = created
        self.reader = reader

    @classmethod
    def open(cls, store: Path, run_ids: list[str]) -> Newest | None:
        """The catalog of ``store`` when it lists exactly ``run_ids`` and keeps start times; else ``None``.

        The file stays open until :meth:`entries` (or :meth:`close`).
        """
        try:
            reader = container.Reader(catalog_file(store))
        except (OSError, container.Damaged):
            return None
        try:
            h = reader.header
            runs = h.get("runs")
            if h.get("layout") != LAYOUT or h.get("order") != sys.byteorder or \
                    h.get("fields") != list(RUNINFO_FIELDS) or type(runs) is not list or \
                    not reader.has("created") or len(runs) != len(run_ids):
                reader.close()
                return None
            rc = [_ints(reader, k, c) for k, c in _RUN_COLS]
            sc = [_ints(reader, k, c) for k, c in _SEG_COLS]
            ec = [_ints(reader, k, c) for k, c in _EDIT_COLS]
            info_at, metrics_at = _ints(reader, "info_at", "Q"), _ints(reader, "metrics_at", "Q")
            artifacts_at = _ints(reader, "artifacts_at", "Q")
            created = memoryview(reader.read("created")).cast("d").tolist()
            n = len(runs)
            if any(len(c) != n for c in rc) or len(created) != n or len(info_at) != n + 1 or \
                    len(metrics_at) != n + 1 or len(artifacts_at) != n + 1:
                reader.close()
                return None
            table = Table(runs, rc, sc, ec, b"", info_at, b"", metrics_at, b"", artifacts_at, created)
            if table.at.keys() != set(run_ids):
                reader.close()
                return None
        except (OSError, container.Damaged, KeyError, TypeError, ValueError):
            reader.close()
            return None
        return cls(store, table, created, reader)

    def close(self) -> None:
        self.reader.close()

    def order(self, desc: bool) -> tuple[list[str], StartKeys]:
        """Every run id in start-time order (ties by id in the same direction; runs without one last), with
        their order keys (:func:`tracker.read.listing.order_key`, made when asked for)."""
        ids = [r[0] for r in self.table.runs]
        order = start_order(self.created, ids, desc)
        return [ids[i] for i in order], StartKeys(order, self.created, ids)

    def entries(self, ids: list[str], refresh_running: Callable[[str, CatalogEntry], CatalogEntry]
                ) -> list[CatalogEntry] | None:
        """The entries of runs ``ids`` (a page), each checked against its files; ``None`` when one does not match."""
        table = self.table
        runs_dir = str(self.store / "runs")
        now = time.time_ns()
        out = []
        reader = self.reader
        try:
            for rid in ids:
                i = table.at[rid]
                if not table.check(i, f"{runs_dir}/{rid}", now):
                    return None
                at, mat, aat = table.info_at, table.metrics_at, table.artifacts_at
                entry = decode_info(reader.read_bytes("info", at[i], at[i + 1] - at[i]),
                                    reader.read_bytes("metrics", mat[i], mat[i + 1] - mat[i]),
                                    reader.read_bytes("artifacts", aat[i], aat[i + 1] - aat[i]))
                if entry.info.status == "running" or table.rc[5][i] & _RECHECK:  # judged again at each listing
                    entry = refresh_running(rid, entry)
                out.append(entry)
        except (OSError, container.Damaged, KeyError, TypeError, ValueError):
            return None
        finally:
            reader.close()
        return out


def start_order(created: list[float], ids: list[str], desc: bool) -> list[int]:
    """The positions of runs ``ids`` in start-time order (``created``: ``inf`` for a run without one, last in
    either direction; equal times by id, in the sort's direction)."""
    inf = float("inf")
    order = sorted(range(len(ids)), key=created.__getitem__, reverse=desc)
    if len(set(created)) != len(created):  # equal start times (rare): ordered by id, in the sort's direction
        j = 0
        while j < len(order):
            k = j + 1
            while k < len(order) and created[order[k]] == created[order[j]]:
                k += 1
            if k - j > 1:
                order[j:k] = sorted(order[j:k], key=ids.__getitem__, reverse=desc)
            j = k
    if desc:  # runs without a start time (+inf) come last in either direction
        n = 0
        while n < len(order) and created[order[n]] == inf:
            n += 1
        order = order[n:] + order[:n]
    return order


class StartKeys:
    """The order keys of runs in an order, each made when read (a page reads a few of 100,000)."""

    def __init__(self, order: list[int], created: list[float], ids: list[str]) -> None:
        self.order, self.created, self.ids = order, created, ids

    def __len__(self) -> int:
        return len(self.order)

    def __getitem__(self, pos: int) -> tuple[int, float, str, str]:
        i = self.order[pos]
        c = self.created[i]
        return (_MISSING, 0.0, "", self.ids[i]) if c == float("inf") else (_NUMBER, c, "", self.ids[i])


__all__ = ["Newest", "StartKeys", "start_order"]
