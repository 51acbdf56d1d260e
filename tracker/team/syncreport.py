"""What a sync did (:class:`SyncReport`) and what the team database's writers table says of one segment.

Split from :mod:`tracker.team.sync`, which re-exports both names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import orjson

from tracker.core.format import encode_nonfinite
from tracker.query._core import is_observer, read_segment


@attrs.define
class SyncReport:
    """What a sync did.

    :ivar events_read: sound events read from segments (new since the last sync).
    :ivar events_new: events the database did not have yet.
    """

    runs: int = 0
    segments: int = 0
    events_read: int = 0
    events_new: int = 0
    problems: int = 0
    seconds: float = 0.0
    #: what was done with blobs (:class:`tracker.team.blobsync.BlobReport`), when ``[team] blobs`` is set
    blobs: Any = None

    def rate(self) -> float:
        """Events read per second."""
        return self.events_read / self.seconds if self.seconds > 0 else 0.0


def _writer_facts(path: Path, timeout: float) -> dict[str, Any]:
    """What the writers table says of a segment: writer or not, host, times, status, finish data."""
    return writer_facts_of(read_segment(path), timeout)


def writer_facts_of(seg: Any, timeout: float) -> dict[str, Any]:
    """:func:`_writer_facts` of a segment already read (a :class:`tracker.read.segment.Segment`)."""
    header = seg.header
    is_writer = header is not None and not is_observer(seg)  # an alert watcher's segment: records only
    fin = seg.finish
    if fin is not None:
        data = fin.get("data") or {}
        status = data.get("status", "finished")
        ended = fin.get("time")
    else:
        status = "running" if seg.alive(timeout) else "crashed"
        ended = (seg.last or {}).get("time") or seg.mtime
    facts = seg.facts()
    return {"is_writer": is_writer, "host": facts.get("host"),
            "started_at": (header or seg.last or {}).get("time") or seg.mtime, "ended_at": ended,
            "status": status, "finish": orjson.dumps(encode_nonfinite(fin.get("data") or {})).decode()
            if fin is not None else None}
