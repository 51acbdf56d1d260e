"""Per-segment columns: built on first read, checked against the segment, extended by its new lines.

``<store>/index/segments/<run id>/<segment file name>.idx`` holds, for one
segment up to a byte offset, the columns of its records per schema
(:mod:`tracker.read.index.build`), the damaged lines met, and per metric the
figures the run catalog combines. Before use it is checked against the
segment: the segment's device and inode, a size of at least the covered
offset, and the CRC-32 of the last covered line. A file that fails is ignored
and rebuilt; one that cannot be read as ours is also reported once.
"""

from __future__ import annotations

import os
import warnings
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from tracker.core.errors import StoreError
from tracker.core.format import RUN_FINISHED, LineChunks, decode_nonfinite, encode_nonfinite
from tracker.core.summary import _MISSING_BITS, MISSING
from tracker.read.index import container
from tracker.read.index.build import Builder, MetricsPart, SchemaPart

LAYOUT = 2
INDEX_DIR = "index"
SEGMENTS_DIR = "segments"


class Writable:
    """Whether this reader may write derived data into the store; off after the first refusal."""

    def __init__(self, enabled: bool = True) -> None:
        self.ok = enabled

    def attempt(self, fn: Callable[[], None]) -> None:
        if not self.ok:
            return
        try:
            fn()
        except OSError:
            # A read-only mount, another user's store, a full disk: answer without writing.
            self.ok = False


def index_file(store: Path, run_id: str, segment: Path) -> Path:
    """Where the columns of ``segment`` (of run ``run_id``) are kept."""
    return store / INDEX_DIR / SEGMENTS_DIR / run_id / f"{segment.name}.idx"


class SchemaCols:
    """The records of one schema in one segment: numpy columns, and the JSON data of other schemas."""

    __slots__ = ("name", "n", "step", "time", "seq", "line", "writers", "cols", "kinds", "data", "special")

    def __init__(self, name: str, n: int, step: Any, time: Any, seq: Any, line: Any,
                 writers: list[list[Any]], cols: dict[str, Any] | None = None, kinds: dict[str, Any] | None = None,
                 data: bytes = b"[]", special: Any = None) -> None:
        self.name = name
        self.n = n
        self.step, self.time, self.seq, self.line = step, time, seq, line
        self.writers = writers
        self.cols = cols if cols is not None else {}
        self.kinds = kinds if kinds is not None else {}
        self.data = data
        self.special = special

    @classmethod
    def from_part(cls, part: SchemaPart) -> SchemaCols:
        import numpy as np

        def arr(a: Any, dtype: Any) -> Any:
            return np.frombuffer(a, dtype=dtype) if len(a) else np.zeros(0, dtype)

        n = len(part)
        if isinstance(part, MetricsPart):
            part.finish()
            return cls(part.name, n, arr(part.steps, np.int64), arr(part.times, np.float64),
                       arr(part.seqs, np.int64), arr(part.lines, np.int64), part.writers,
                       cols={k: arr(a, np.float64) for k, a in part.cols.items()},
                       kinds={k: arr(a, np.uint8) for k, a in part.kinds.items()})
        return cls(part.name, n, arr(part.steps, np.int64), arr(part.times, np.float64), arr(part.seqs, np.int64),
                   arr(part.lines, np.int64), part.writers, data=b"[" + b",".join(part.data) + b"]",
                   special=arr(part.special, np.uint8))

    def writer_ids(self) -> list[str]:
        """The writer id of each record."""
        out: list[str] = []
        bounds = [*self.writers, [self.n, None]]
        for (i, w), (j, _) in zip(bounds, bounds[1:], strict=False):
            out.extend([w] * (j - i))
        return out

    def datas(self) -> list[dict[str, Any]]:
        """The data of each record as stored (non-finite floats still as their strings)."""
        return orjson.loads(self.data)

    def extend(self, other: SchemaCols) -> SchemaCols:
        """These records followed by ``other``'s (the same schema, later lines of the same segment)."""
        import numpy as np

        n = self.n
        writers = [list(w) for w in self.writers]
        for i, w in other.writers:
            if not writers or writers[-1][1] != w:
                writers.append([i + n, w])
        cat = np.concatenate
        out = SchemaCols(self.name, n + other.n, cat([self.step, other.step]), cat([self.time, other.time]),
                         cat([self.seq, other.seq]), cat([self.line, other.line]), writers)
        if self.name == "metrics":
            for k in {**self.cols, **other.cols}:
                a = self.cols.get(k)
                b = other.cols.get(k)
                out.cols[k] = cat([a if a is not None else np.full(n, MISSING),
                                   b if b is not None else np.full(other.n, MISSING)])
            for k in {**self.kinds, **other.kinds}:
                a = self.kinds.get(k)
                b = other.kinds.get(k)
                out.kinds[k] = cat([a if a is not None else np.zeros(n, np.uint8),
                                    b if b is not None else np.zeros(other.n, np.uint8)])
        else:
            inner = [d[1:-1] for d in (self.data, other.data) if len(d) > 2]
            out.data = b"[" + b",".join(inner) + b"]"
            out.special = cat([self.special, other.special])
        return out


def metric_stats(part: SchemaCols) -> dict[str, dict[str, Any]]:
    """Per metric of a ``metrics`` part: count, first, last, min, max, their steps and log-order keys.

    ``count`` counts the records that hold the metric (NaN included); ``min`` and
    ``max`` are over its non-NaN values. A key is the segment's running maximum
    of time at that record, the order :func:`tracker.read.reader.merge_log_order` uses
    across segments.
    """
    import numpy as np

    out: dict[str, dict[str, Any]] = {}
    if not part.n:
        return out
    keys = np.maximum.accumulate(part.time)
    n = part.n
    for name, col in part.cols.items():
        present = col.view(np.uint64) != _MISSING_BITS
        if present.all():  # the common case: a metric in every record, no copies of it
            idx = None
            first, last, count = 0, n - 1, n
            vals = col
        else:
            idx = np.flatnonzero(present)
            if not idx.size:
                continue
            first, last, count = int(idx[0]), int(idx[-1]), int(idx.size)
            vals = col[idx]
        kinds = part.kinds.get(name)

        def value(i: int, col: Any = col, kinds: Any = kinds) -> Any:
            v = float(col[i])
            if kinds is not None and kinds[i]:
                return bool(v) if kinds[i] == 2 else int(v)
            return v

        entry: dict[str, Any] = {
            "count": count,
            "first": value(first), "first_step": int(part.step[first]), "first_key": float(keys[first]),
            "last": value(last), "last_step": int(part.step[last]), "last_key": float(keys[last]),
            "min": None, "min_step": None, "min_key": None, "max": None, "max_step": None, "max_key": None,
        }
        def at(i: Any, idx: Any = idx) -> int:  # a position in ``vals`` as a record index
            return int(i) if idx is None else int(idx[i])

        nan = np.isnan(vals)
        if nan.any():
            ok = np.flatnonzero(~nan)
            if not ok.size:
                out[name] = entry
                continue
            lo, hi = at(ok[np.argmin(vals[ok])]), at(ok[np.argmax(vals[ok])])
        else:
            lo, hi = at(np.argmin(vals)), at(np.argmax(vals))
        entry.update({"min": value(lo), "min_step": int(part.step[lo]), "min_key": float(keys[lo]),
                      "max": value(hi), "max_step": int(part.step[hi]), "max_key": float(keys[hi])})
        out[name] = entry
    return out


class SegmentIndex:
    """One segment's derived data as far as it covers: columns per schema, problems, metric figures."""

    def __init__(self, path: Path, dev: int, ino: int, offset: int, lines: int, last_start: int, last_crc: int,
                 parts: dict[str, SchemaCols], problems: list[list[Any]], stats: dict[str, Any],
                 meta: dict[str, dict[str, Any]], rest: bytes = b"", size: int = 0, mtime_ns: int = 0,
                 stat_size: int | None = None) -> None:
        self.path = path
        #: How far the segment was looked at when it was read (at least ``offset``): its size then,
        #: or the bound the read was given, whichever is smaller; ``offset`` plus ``rest``.
        self.size = max(size, offset)
        #: The segment's size when it was read (more than ``size`` when a bound stopped the read).
        self._stat_size = size if stat_size is None else stat_size
        #: Whether the last covered line is the writer's finish event (no writer touches the segment again).
        self.closed = False
        self.dev, self.ino = dev, ino
        #: The segment's modification time when it was read (paired with ``size``).
        self.mtime_ns = mtime_ns
        self.offset, self.lines = offset, lines
        self.last_start, self.last_crc = last_start, last_crc
        self.parts = parts
        self.problems = problems
        self.stats = stats
        #: Per schema: ``n``, ``first_line``, ``max_step`` (known without loading the columns).
        self.meta = meta
        #: Bytes past the covered offset without a newline: a torn write, or one in progress.
        self.rest = rest
        #: The index file that holds exactly this (``None``: only in memory), for streaming its columns.
        self.source: Path | None = None

    def schema_names(self) -> list[str]:
        """The schemas present, in order of first appearance in the segment."""
        return sorted(self.meta, key=lambda s: self.meta[s]["first_line"])

    def max_step(self) -> int | None:
        steps = [m["max_step"] for m in self.meta.values() if m.get("max_step") is not None]
        return max(steps) if steps else None


def _meta_of(parts: dict[str, SchemaCols]) -> dict[str, dict[str, Any]]:
    return {name: {"n": p.n, "first_line": int(p.line[0]) if p.n else 0,
                   "max_step": int(p.step.max()) if p.n else None}
            for name, p in parts.items()}


def _header(ix: SegmentIndex) -> dict[str, Any]:
    schemas = {}
    for name, p in ix.parts.items():
        schemas[name] = {**ix.meta[name], "writers": p.writers, "metrics": list(p.cols), "kinds": list(p.kinds),
                         "other": name != "metrics"}
    # The time is kept only for a finished segment that ended where the columns do (a running writer
    # refreshes its segment's time as a heartbeat; a segment that grew while read has a newer one): a
    # reader then knows that a segment of that size with another time was rewritten.
    covered_time = ix.mtime_ns if ix.closed and ix._stat_size == ix.offset else 0
    return {"layout": LAYOUT, "segment": ix.path.name, "dev": ix.dev, "ino": ix.ino, "mtime": covered_time,
            "offset": ix.offset,
            "lines": ix.lines, "last_start": ix.last_start, "last_crc": ix.last_crc, "problems": ix.problems,
            "schemas": schemas, "stats": _encode_stats(ix.stats)}


def _encode_stats(stats: dict[str, Any]) -> dict[str, Any]:
    # NaN and infinities as the store's strings: the values of these keys are always numbers.
    return encode_nonfinite(stats)


def _decode_stats(stats: dict[str, Any]) -> dict[str, Any]:
    return {k: decode_nonfinite(s) for k, s in stats.items()}


def _save(ix: SegmentIndex, target: Path) -> None:
    arrays: dict[str, bytes | memoryview] = {}
    for name, p in ix.parts.items():
        for col in ("step", "time", "seq", "line"):
            arrays[f"{name}\x00{col}"] = memoryview(getattr(p, col))
        for k, a in p.cols.items():
            arrays[f"{name}\x00m\x00{k}"] = memoryview(a)
        for k, a in p.kinds.items():
            arrays[f"{name}\x00k\x00{k}"] = memoryview(a)
        if name != "metrics":
            arrays[f"{name}\x00data"] = p.data
            arrays[f"{name}\x00special"] = memoryview(p.special)
    container.write(target, _header(ix), arrays)


def _load_part(reader: container.Reader, name: str, info: dict[str, Any]) -> SchemaCols:
    import numpy as np

    def arr(key: str, dtype: Any) -> Any:
        return np.frombuffer(reader.read_array(key), dtype=dtype)

    n = info["n"]
    part = SchemaCols(name, n, arr(f"{name}\x00step", np.int64), arr(f"{name}\x00time", np.float64),
                      arr(f"{name}\x00seq", np.int64), arr(f"{name}\x00line", np.int64),
                      [list(w) for w in info["writers"]])
    for k in info["metrics"]:
        part.cols[k] = arr(f"{name}\x00m\x00{k}", np.float64)
    for k in info["kinds"]:
        part.kinds[k] = arr(f"{name}\x00k\x00{k}", np.uint8)
    if info["other"]:
        part.data = bytes(reader.read(f"{name}\x00data"))
        part.special = arr(f"{name}\x00special", np.uint8)
    for a in (part.step, part.time, part.seq, part.line, *part.cols.values(), *part.kinds.values()):
        if a.size != n:
            raise container.Damaged(f"schema {name!r}: a column of {a.size} rows, expected {n}")
    return part


#: Records per window when columns are streamed (:func:`stream_part`).
WINDOW_ROWS = 1 << 16


def stream_part(ix: SegmentIndex, name: str, rows: int | None = None) -> Iterator[SchemaCols]:
    """The records of schema ``name`` in windows of at most ``rows``, read from the index file in slices.

    Memory stays flat whatever the segment's length: each ``metrics`` column
    is first checked against its CRC in chunks, then read a window at a time,
    the file open only while a window is read (a merge of any number of
    segments stays within the open-file limit). Other schemas, and an index
    only in memory, are given whole. When the file no longer holds what
    ``ix`` was read from (another reader rewrote it for a grown segment) or
    cannot be opened, the records ``ix`` covers are parsed from the segment.
    """
    part = ix.parts.get(name)
    info = ix.meta.get(name)
    if part is not None or info is None:
        if part is not None:
            yield part
        return
    rows = rows or WINDOW_ROWS
    try:
        if name != "metrics" or ix.source is None:
            raise container.Damaged("not streamed")
        with _same_file(ix) as reader:
            entry = reader.header["schemas"][name]
            for key in _keys(name, entry):
                reader.verify(key)
        n = entry["n"]
        for a in range(0, n, rows):
            with _same_file(ix) as reader:
                window = _window(reader, name, entry, a, min(n, a + rows))
            yield window
        return
    except (OSError, container.Damaged, KeyError, TypeError, ValueError):
        pass
    whole = _load_one(ix, name)
    if whole is None:
        whole = _reparse(ix).get(name)
    if whole is not None:
        yield whole


class _same_file:
    """The index file of ``ix`` opened, if it still holds what ``ix`` was read from (else ``Damaged``)."""

    def __init__(self, ix: SegmentIndex) -> None:
        self.ix = ix
        self.reader: container.Reader | None = None

    def __enter__(self) -> container.Reader:
        if self.ix.source is None:
            raise container.Damaged("only in memory")
        reader = container.Reader(self.ix.source)
        try:
            h = reader.header
            _check_header(h)
            if (h["ino"], h["offset"], h["last_crc"]) != (self.ix.ino, self.ix.offset, self.ix.last_crc):
                raise container.Damaged("rewritten since")
        except BaseException:
            reader.close()
            raise
        self.reader = reader
        return reader

    def __exit__(self, *exc: object) -> None:
        if self.reader is not None:
            self.reader.close()


def _keys(name: str, entry: dict[str, Any]) -> list[str]:
    keys = [f"{name}\x00{c}" for c in ("step", "time", "seq", "line")]
    keys += [f"{name}\x00m\x00{k}" for k in entry["metrics"]]
    return keys + [f"{name}\x00k\x00{k}" for k in entry["kinds"]]


def _load_one(ix: SegmentIndex, name: str) -> SchemaCols | None:
    """Schema ``name``'s columns of ``ix``, read whole from its file (``None`` when that fails)."""
    try:
        with _same_file(ix) as reader:
            return _load_part(reader, name, reader.header["schemas"][name])
    except (OSError, container.Damaged, KeyError, TypeError, ValueError):
        return None


def _reparse(ix: SegmentIndex) -> dict[str, SchemaCols]:
    """The parts of the lines ``ix`` covers, parsed again from the segment (its first ``ix.lines`` lines)."""
    builder = Builder(str(ix.path))
    left = ix.lines
    for lines in LineChunks(ix.path, 0):
        if left <= 0:
            break
        builder.feed(lines[:left])
        left -= len(lines)
    return {name: SchemaCols.from_part(p) for name, p in builder.parts.items()}


def _window(reader: container.Reader, name: str, entry: dict[str, Any], a: int, b: int) -> SchemaCols:
    """Rows ``[a, b)`` of schema ``name`` from the file (its arrays verified beforehand)."""
    import numpy as np

    def arr(key: str, dtype: Any) -> Any:
        size = np.dtype(dtype).itemsize
        return np.frombuffer(reader.read_range(key, a * size, (b - a) * size), dtype=dtype)

    writers = [list(w) for w in entry["writers"]]
    ws = [[max(0, i - a), w] for j, (i, w) in enumerate(writers)
          if i < b and (j + 1 == len(writers) or writers[j + 1][0] > a)]
    part = SchemaCols(name, b - a, arr(f"{name}\x00step", np.int64), arr(f"{name}\x00time", np.float64),
                      arr(f"{name}\x00seq", np.int64), arr(f"{name}\x00line", np.int64), ws)
    for k in entry["metrics"]:
        part.cols[k] = arr(f"{name}\x00m\x00{k}", np.float64)
    for k in entry["kinds"]:
        part.kinds[k] = arr(f"{name}\x00k\x00{k}", np.uint8)
    for col in (part.step, *part.cols.values()):
        if col.size != b - a:
            raise container.Damaged(f"schema {name!r}: a window of {col.size} rows, expected {b - a}")
    return part


class Outdated(container.Damaged):
    """An index file of another layout (written by another version): rebuilt without a warning."""


def _check_header(h: dict[str, Any]) -> None:
    if h.get("layout") != LAYOUT:
        raise Outdated(f"layout {h.get('layout')!r}, expected {LAYOUT}")
    ints = ("dev", "ino", "mtime", "offset", "lines", "last_start", "last_crc")
    if not all(type(h.get(k)) is int for k in ints) \
            or type(h.get("schemas")) is not dict or type(h.get("problems")) is not list \
            or type(h.get("stats")) is not dict or not 0 <= h["last_start"] <= h["offset"]:
        raise container.Damaged("not an index of this layout")
    for name, info in h["schemas"].items():
        if type(info) is not dict or type(info.get("n")) is not int or type(info.get("writers")) is not list \
                or type(info.get("metrics")) is not list or type(info.get("kinds")) is not list:
            raise container.Damaged(f"schema {name!r}: malformed entry")


def _last_line_crc(fd: int, start: int, end: int) -> int:
    """CRC-32 of the segment's bytes ``[start, end - 1)``: its last covered line without the newline."""
    data = os.pread(fd, end - start, start) if end > start else b""
    if end > start and (len(data) != end - start or data[-1:] != b"\n"):
        return -1
    return zlib.crc32(data[:-1])


def _stat(path: Path) -> os.stat_result:
    try:
        return os.stat(path)
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from None


def load(store: Path, run_id: str, segment: Path, schemas: set[str] | None, writable: Writable,
         warn_index: Callable[[str], None] | None = None, *, derived: bool = True,
         end: int | None = None) -> SegmentIndex:
    """The segment's derived data, with the columns of ``schemas`` (``None``: all) loaded.

    Checked against the segment before use; extended by the lines past the
    covered offset up to the segment's size at this call (and saved, when the
    store can be written); rebuilt from the segment when it does not match.
    Lines a writer appends meanwhile are left for the next read: the work is
    bounded by what was there, however fast the segment grows.

    :param warn_index: called with a message naming an index file that is damaged or foreign.
    :param derived: ``False`` parses the whole segment, reading and writing no derived file.
    :param end: read no further than this byte offset (a reader's snapshot of the segment's size);
        derived data that already covers more is used as it is.
    """
    st = _stat(segment)
    limit = st.st_size if end is None else max(0, min(end, st.st_size))
    target = index_file(store, run_id, segment)
    old: SegmentIndex | None = None
    if not derived:
        ix = _extend(None, segment, st, limit)
        if schemas is not None:
            ix.parts = {k: v for k, v in ix.parts.items() if k in schemas}
        return ix
    try:
        with container.Reader(target) as reader:
            h = reader.header
            _check_header(h)
            # A segment no longer than the covered part whose time moved was rewritten in place.
            if h["dev"] == st.st_dev and h["ino"] == st.st_ino and h["offset"] <= st.st_size \
                    and h["segment"] == segment.name \
                    and not (h["offset"] == st.st_size and h["mtime"] and h["mtime"] != st.st_mtime_ns):
                try:
                    fd = os.open(segment, os.O_RDONLY)
                except OSError as exc:
                    raise StoreError(f"cannot read {segment}: {exc.strerror or exc}") from None
                try:
                    crc_ok = h["offset"] == 0 or _last_line_crc(fd, h["last_start"], h["offset"]) == h["last_crc"]
                finally:
                    os.close(fd)
                if crc_ok:
                    grown = st.st_size > h["offset"]
                    wanted = h["schemas"] if schemas is None or grown else \
                        {k: v for k, v in h["schemas"].items() if k in schemas}
                    parts = {name: _load_part(reader, name, info) for name, info in wanted.items()}
                    meta = {name: {"n": i["n"], "first_line": i["first_line"], "max_step": i["max_step"]}
                            for name, i in h["schemas"].items()}
                    old = SegmentIndex(segment, st.st_dev, st.st_ino, h["offset"], h["lines"], h["last_start"],
                                       h["last_crc"], parts, h["problems"], _decode_stats(h["stats"]), meta,
                                       size=st.st_size, mtime_ns=st.st_mtime_ns)
                    old.source = target
    except (FileNotFoundError, Outdated):
        pass
    except (container.Damaged, KeyError, TypeError, ValueError) as exc:
        if warn_index is not None:
            warn_index(f"{target}: {exc}; rebuilt from the segment")
        old = None
    except OSError as exc:
        if warn_index is not None and not isinstance(exc, PermissionError):
            warn_index(f"{target}: {exc.strerror or exc}; rebuilt from the segment")
        old = None
    if old is not None and limit <= old.offset:
        old.size = old.offset  # looked at no further than the covered part
        return old
    ix = _extend(old, segment, st, limit)
    if ix.offset != (old.offset if old is not None else -1):
        ix.source = None
        writable.attempt(lambda: _save(ix, target))
        if writable.ok:
            ix.source = target
    if schemas is not None and ix.source is not None:
        # What was not asked for can be read from the file later; only in memory, it is kept.
        ix.parts = {k: v for k, v in ix.parts.items() if k in schemas}
    return ix


def _extend(old: SegmentIndex | None, segment: Path, st: os.stat_result, limit: int) -> SegmentIndex:
    """``old`` (or nothing) followed by the segment's complete lines past its offset, up to byte ``limit``."""
    start = old.offset if old is not None else 0
    builder = Builder(str(segment), (old.lines if old is not None else 0) + 1)
    # Up to the size the segment had when this read began: a writer appending faster than this
    # reader parses is never chased (its new lines are read next time).
    chunks = LineChunks(segment, start, end=limit)
    pos = start
    last_start = old.last_start if old is not None else 0
    last_line = None
    for lines in chunks:
        builder.feed(lines)
        pos += sum(map(len, lines)) + len(lines)
        last_line = lines[-1]
        last_start = pos - len(last_line) - 1
    if old is not None and last_line is None:
        old.rest = chunks.rest
        old.size = old.offset + len(chunks.rest)
        old._stat_size = st.st_size
        old.mtime_ns = st.st_mtime_ns
        return old
    parts = {name: SchemaCols.from_part(p) for name, p in builder.parts.items()}
    if old is not None:
        merged = dict(old.parts)
        for name, p in parts.items():
            merged[name] = merged[name].extend(p) if name in merged else p
        parts = merged
        problems = old.problems + builder.problems
        lines_total = builder.lineno
    else:
        problems = builder.problems
        lines_total = builder.lineno
    # The CRC of the last covered line, which the next reader checks before trusting this index.
    last_crc = zlib.crc32(last_line) if last_line is not None else 0
    metrics = parts.get("metrics")
    stats = metric_stats(metrics) if metrics is not None else {}
    ix = SegmentIndex(segment, st.st_dev, st.st_ino, pos, lines_total, last_start, last_crc, parts, problems,
                      stats, _meta_of(parts), chunks.rest, size=pos + len(chunks.rest), mtime_ns=st.st_mtime_ns,
                      stat_size=st.st_size)
    if last_line is not None:
        try:
            event = orjson.loads(last_line)
            ix.closed = type(event) is dict and event.get("kind") == RUN_FINISHED
        except orjson.JSONDecodeError:
            ix.closed = False
    return ix


def warn_once(seen: set[str]) -> Callable[[str], None]:
    """A ``warn_index`` that says each file once per reader."""
    from tracker.host.bus import TrackerWarning

    def warn(message: str) -> None:
        if message not in seen:
            seen.add(message)
            warnings.warn(f"tracker: derived data not used: {message}", TrackerWarning, stacklevel=4)

    return warn
