"""How much of a run has no derived data yet: its segments' bytes, and those whose columns are missing or older.

Only ``stat`` calls, cheap enough for the first request of a run page: the dashboard's
progress line on a store never read, and the CLI's warm-up (:mod:`tracker.cli.warmup`).
"""

from __future__ import annotations

from pathlib import Path


def _segments(store_path: Path, run_id: str) -> list[Path]:
    from tracker.read.segment import segment_paths

    try:
        return segment_paths(store_path / "runs" / run_id)
    except Exception:  # noqa: BLE001 - an unreadable run is the reader's to report, not this helper's
        return []


def _unbuilt(store_path: Path, run_id: str, segment: Path) -> int:
    """The segment's bytes when its derived file is missing or older than it, else 0."""
    from tracker.read.index import index_file

    try:
        st = segment.stat()
    except OSError:
        return 0
    try:
        if index_file(store_path, run_id, segment).stat().st_mtime_ns >= st.st_mtime_ns:
            return 0
    except OSError:
        pass
    return st.st_size


def cold_bytes(store_path: Path | str, run_id: str) -> dict[str, int]:
    """``{"jsonl_bytes", "unbuilt_bytes"}`` of a run: its segments' bytes, and those without derived data.

    Only ``stat`` calls: cheap enough for the first request of a run page.
    """
    store_path = Path(store_path)
    total = unbuilt = 0
    for seg in _segments(store_path, run_id):
        try:
            total += seg.stat().st_size
        except OSError:
            continue
        unbuilt += _unbuilt(store_path, run_id, seg)
    return {"jsonl_bytes": total, "unbuilt_bytes": unbuilt}
