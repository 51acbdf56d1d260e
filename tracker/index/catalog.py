"""The run catalog: per run its info, per-metric figures and records per schema, in one file.

``<store>/index/catalog.idx`` holds one entry per run with what it was
derived from: the run folder's inode and modification time (a segment added,
removed or renamed changes it), the same of its ``edits/`` folder, and per
segment its inode, size, covered offset and the CRC-32 of its last covered
line. An entry is used only while all of these still hold; a running run's
status is derived again from its segments' ends at every listing (its writer
may have died). Anything else is derived again from the segments
(:mod:`tracker.index.segments`) and the file rewritten under a temporary name.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from ..format import encode_nonfinite, nonfinite_paths, restore_nonfinite
from ..records import RunInfo
from . import container
from .segments import INDEX_DIR, Writable, _last_line_crc

LAYOUT = 3
CATALOG = "catalog.idx"


class CatalogEntry:
    """What the catalog knows of one run.

    :ivar info: the run's :class:`~tracker.RunInfo`.
    :ivar metrics: per metric ``count``, ``first``, ``first_step``, ``last``, ``last_step``,
        ``min``, ``min_step``, ``max``, ``max_step`` (see :meth:`tracker.RunView.metric_stats`);
        parsed on first access, since a listing of runs never needs them.
    :ivar schemas: records per schema.
    """

    __slots__ = ("info", "_metrics", "_raw", "schemas")

    def __init__(self, info: RunInfo, metrics: dict[str, dict[str, Any]] | None, schemas: dict[str, int],
                 raw: str | None = None) -> None:
        self.info = info
        self._metrics = metrics
        self._raw = raw
        self.schemas = schemas

    @property
    def metrics(self) -> dict[str, dict[str, Any]]:
        if self._metrics is None:
            from ..format import decode_nonfinite

            self._metrics = decode_nonfinite(orjson.loads(self._raw)) if self._raw else {}
        return self._metrics

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CatalogEntry) and (self.info, self.metrics, self.schemas) == \
            (other.info, other.metrics, other.schemas)

    def __repr__(self) -> str:
        return f"CatalogEntry(info={self.info!r}, metrics={self.metrics!r}, schemas={self.schemas!r})"


def catalog_file(store: Path) -> Path:
    return store / INDEX_DIR / CATALOG


def _stat_key(st: os.stat_result) -> list[int]:
    return [st.st_ino, st.st_mtime_ns]


def folder_state(run_dir: Path | str) -> tuple[list[int], list[int] | None]:
    """The run folder's and its ``edits/`` folder's ``[inode, mtime_ns]`` (``None``: no edits folder)."""
    st = os.stat(run_dir)
    try:
        est: list[int] | None = _stat_key(os.stat(f"{run_dir}/edits"))
    except FileNotFoundError:
        est = None
    return _stat_key(st), est


def encode_entry(entry: CatalogEntry, state: dict[str, Any]) -> dict[str, Any]:
    """A catalog entry as JSON-ready data, with the facts it was derived from (``state``).

    The per-metric figures are kept as one JSON text, parsed only when asked for.
    """
    info = entry.info.to_dict(copy=False)
    del info["duration"]  # derived from the times, not a field
    return {**state, "info": encode_nonfinite(info), "nf": nonfinite_paths(info),
            "metrics": orjson.dumps(encode_nonfinite(entry.metrics)).decode(), "schemas": entry.schemas}


def decode_entry(data: dict[str, Any]) -> CatalogEntry:
    """The entry back (raises on anything malformed: the caller derives it again)."""
    # restore_nonfinite works in place: on a copy, so that the raw entry can be written back as it was.
    info = restore_nonfinite(copy.deepcopy(data["info"]), data["nf"]) if data["nf"] else dict(data["info"])
    raw = data["metrics"]
    if type(raw) is not str:
        raise TypeError("metrics: expected JSON text")
    return CatalogEntry(RunInfo(**info), None, data["schemas"], raw=raw)


def still_holds(run_dir: str, data: dict[str, Any]) -> bool:
    """Whether the run's files are as they were when ``data`` was derived."""
    try:
        st = os.stat(run_dir)
        if [st.st_ino, st.st_mtime_ns] != data["dir"]:
            return False
        # An edits folder created since changed the run folder's time; one that was there is checked.
        if data["edits_dir"] is not None and _stat_key(os.stat(f"{run_dir}/edits")) != data["edits_dir"]:
            return False
        for name, (ino, size, offset, last_start, last_crc) in data["segs"].items():
            path = f"{run_dir}/{name}"
            st = os.stat(path)
            if st.st_ino != ino or st.st_size != size:
                return False
            if offset:
                fd = os.open(path, os.O_RDONLY)
                try:
                    if _last_line_crc(fd, last_start, offset) != last_crc:
                        return False
                finally:
                    os.close(fd)
        for name, (ino, size) in data["edits"].items():
            st = os.stat(f"{run_dir}/edits/{name}")
            if st.st_ino != ino or st.st_size != size:
                return False
    except (OSError, KeyError, TypeError, ValueError):
        return False
    return True


def load(store: Path) -> dict[str, Any]:
    """The catalog's raw entries by run id; empty when it is missing, damaged or of another layout."""
    try:
        with container.Reader(catalog_file(store)) as reader:
            h = reader.header
            if h.get("layout") != LAYOUT or type(h.get("runs")) is not dict:
                return {}
            return h["runs"]
    except (OSError, container.Damaged):
        return {}


def save(store: Path, entries: dict[str, Any], writable: Writable) -> None:
    """Write the catalog (temporary name, then rename), when the store can be written."""
    writable.attempt(lambda: container.write(catalog_file(store), {"layout": LAYOUT, "runs": entries}, {}))


def entries(store: Path, run_ids: list[str], derive: Callable[[str], tuple[CatalogEntry, dict[str, Any]]],
            refresh_running: Callable[[str, CatalogEntry], CatalogEntry], writable: Writable,
            on_error: Callable[[str, Exception], None]) -> list[CatalogEntry]:
    """The catalog entries of ``run_ids``: kept ones that still hold, the others derived again.

    :param derive: gives a run's entry and the state it was derived from.
    :param refresh_running: gives the entry of a run listed as running with its status derived again.
    :param on_error: called for a run that cannot be read (it is left out).
    """
    raw = load(store)
    runs_dir = str(store / "runs")
    out = []
    fresh: dict[str, Any] = {}
    changed = set(raw) != set(run_ids)
    for rid in run_ids:
        data = raw.get(rid)
        entry = None
        if data is not None and still_holds(f"{runs_dir}/{rid}", data):
            try:
                entry = decode_entry(data)
            except (KeyError, TypeError, ValueError):
                entry = None
        if entry is None:
            try:
                entry, state = derive(rid)
            except Exception as exc:  # noqa: BLE001 - one unreadable run never hides the others
                on_error(rid, exc)
                changed = True
                continue
            data = encode_entry(entry, state)
            changed = True
        elif entry.info.status == "running" or data.get("recheck"):
            newer = refresh_running(rid, entry)
            if newer.info != entry.info:
                entry = newer
                data = {**data, **{k: v for k, v in encode_entry(entry, {}).items() if k in ("info", "nf")}}
                changed = True
        fresh[rid] = data
        out.append(entry)
    if changed:
        save(store, fresh, writable)
    return out
