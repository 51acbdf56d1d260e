"""The media of a report (``tracker report --max-media-bytes``): audio, video, 3D and HTML inline, as ``data:`` URIs.

A report is one offline file, so its media travel inside it. For each run
(the first :data:`MEDIA_RUNS` of the report) and each media name, at most
:data:`PER_NAME` records are taken, spread evenly over the name's steps (its
first and last always among them). Their bytes go in whole, as ``data:``
URIs, while the report's budget lasts: the last step of every name first,
then the first, then the ones between, so that a tight budget still shows
each name once. A file beyond the budget is left out with a note saying what
it was and how big; a video left out keeps a poster (its first frame, scaled
down to :data:`POSTER_WIDTH` pixels, as PNG) when PyAV (or, for a gif,
Pillow) can read it. Each blob goes in once, however many records name it.
The page (``static/media.js``) draws them with the dashboard's own viewers;
the report's Content-Security-Policy lets them load only ``data:`` URIs.
"""

from __future__ import annotations

import base64
import hashlib
import io
import re
from collections.abc import Sequence
from typing import Any

from tracker.core.errors import StoreError, TrackerError

#: The default budget of a report's media, in bytes (the files as stored; base64 adds a third).
DEFAULT_MAX_MEDIA_BYTES = 4 * 2**20
#: Records per run and media name at most.
PER_NAME = 8
#: Runs whose media a report holds at most (as its plugin panels).
MEDIA_RUNS = 10
#: Width of a poster frame, and the bytes all posters may take beyond the budget.
POSTER_WIDTH = 320
POSTER_BYTES = 2**20

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmg]i?b?|b)?\s*$", re.I)
_UNITS = {"": 1, "b": 1, "k": 1024, "m": 2**20, "g": 2**30}


def parse_bytes(text: str, option: str = "--max-media-bytes") -> int:
    """A byte count: ``4194304``, ``4MiB``, ``4M``, ``512KiB``, ``0`` (binary units either way).

    :raises TrackerError: naming the option, what was expected and what was given.
    """
    m = _SIZE.match(str(text))
    if m is None:
        raise TrackerError(f"{option}: expected a number of bytes such as 4194304, 4MiB or 512KiB, given {text!r}")
    return int(float(m.group(1)) * _UNITS[(m.group(2) or "").lower()[:1]])


def spread(steps: Sequence[int], n: int) -> list[int]:
    """At most ``n`` of the sorted ``steps``, evenly spread, the first and last among them."""
    if len(steps) <= n:
        return list(steps)
    if n == 1:
        return [steps[-1]]
    picked = sorted({round(i * (len(steps) - 1) / (n - 1)) for i in range(n)})
    return [steps[i] for i in picked]


def priority(steps: Sequence[int]) -> list[int]:
    """``steps`` in the order their bytes are taken: the last, the first, then the middles of the gaps."""
    if not steps:
        return []
    out = [steps[-1]] + ([steps[0]] if len(steps) > 1 else [])
    # Breadth first: the middle of the whole stretch, then the middles of its two halves, and so on, so
    # that a tight budget still spreads over the run.
    from collections import deque

    spans = deque([(1, len(steps) - 2)])
    while spans:
        lo, hi = spans.popleft()
        if lo > hi:
            continue
        mid = (lo + hi) // 2
        out.append(steps[mid])
        spans.extend(((lo, mid - 1), (mid + 1, hi)))
    return out


def poster(path: Any, fmt: str) -> bytes | None:
    """The first frame of video ``path`` as a PNG at most :data:`POSTER_WIDTH` wide; ``None`` when it cannot be read."""
    try:
        from PIL import Image
    except ImportError:
        return None
    try:
        if fmt == "gif":
            with Image.open(path) as im:
                frame = im.convert("RGB")
        else:
            try:
                import av
            except ImportError:
                return None
            with av.open(str(path)) as container:
                frame = next(container.decode(video=0)).to_image()
    except Exception:  # noqa: BLE001 - a file a decoder cannot read gets the note without a poster
        return None
    if frame.width > POSTER_WIDTH:
        frame = frame.resize((POSTER_WIDTH, max(1, round(frame.height * POSTER_WIDTH / frame.width))))
    out = io.BytesIO()
    frame.save(out, format="PNG", optimize=True)
    return out.getvalue()


def _data_uri(ctype: str, data: bytes) -> str:
    return f"data:{ctype.split(';')[0]};base64,{base64.b64encode(data).decode('ascii')}"


def media_doc(store: Any, infos: Sequence[Any], max_bytes: int = DEFAULT_MAX_MEDIA_BYTES) -> dict[str, Any] | None:
    """What a report holds of the runs' media; ``None`` when none of them logged any.

    ``{"runs": [{"id", "names": [{"name", "kind", "steps": n logged, "items": [{"step", "record", "sha256",
    "left_out"?: bytes, "poster"?: sha256}]}]}], "blobs": {sha256: data URI}, "max_bytes", "left_out": note}``
    """
    from tracker.capture.blobs import blobs_of
    from tracker.read.aggregate import view_of
    from tracker.ui.media import MEDIA_SCHEMAS, Media, content_type

    if max_bytes < 0:
        raise TrackerError(f"--max-media-bytes: expected 0 or more bytes, given {max_bytes}")
    runs: list[dict[str, Any]] = []
    queue: list[tuple[int, int, dict[str, Any], str, str | None, Any]] = []
    held = total = 0
    for info in list(infos)[:MEDIA_RUNS]:
        view = view_of(store, info)
        if not set(view.schemas()) & set(MEDIA_SCHEMAS):
            continue
        media = Media(view)
        if not media.entries:
            continue
        blobs = blobs_of(view)
        names = []
        for name, entry in media.entries.items():
            chosen = spread(entry.steps, PER_NAME)
            items = {}
            for rank, step in enumerate(priority(chosen)):
                rec = entry.records[entry.by_step[step][-1]]
                fields = {k: v for k, v in rec.items() if k not in ("step", "time")}
                item = items[step] = {"step": step, "record": fields, "sha256": rec.get("sha256")}
                queue.append((rank, len(queue), item, entry.kind, rec.get("format"), blobs))
            names.append({"name": name, "kind": entry.kind, "steps": len(entry.steps),
                          "items": [items[s] for s in sorted(items)]})
            held += len(items)
            total += len(entry.steps)
        runs.append({"id": info.id, "names": names})
    if not runs:
        return None
    inline: dict[str, str] = {}
    budget, poster_budget = max_bytes, POSTER_BYTES
    left = []
    for _rank, _i, item, kind, fmt, blobs in sorted(queue, key=lambda q: q[:2]):
        sha = item["sha256"]
        if sha in inline:
            continue
        try:
            path = blobs.fetch(sha, None)
            size = path.stat().st_size
        except (StoreError, OSError) as exc:
            item["error"] = f"the file is not in the store: {exc}"
            continue
        if size <= budget:
            data = path.read_bytes()
            if hashlib.sha256(data).hexdigest() != sha:
                item["error"] = f"blob {sha} is damaged: its bytes hash to something else"
                continue
            inline[sha] = _data_uri(content_type(kind, fmt), data)
            budget -= size
            continue
        item["left_out"] = size
        left.append(size)
        if kind == "video" and poster_budget > 0:
            png = poster(path, fmt or "")
            if png is not None and len(png) <= poster_budget:
                key = f"poster:{sha}"
                inline[key] = _data_uri("image/png", png)
                item["poster"] = key
                poster_budget -= len(png)
    notes = []
    if held < total:
        notes.append(f"This report holds {held} of the {total} media records logged ({PER_NAME} steps per name at "
                     "most, spread over each name's steps); the slider moves among them.")
    if left:
        from tracker.core.text import human_bytes

        notes.append(f"{len(left)} file{'s' if len(left) != 1 else ''} ({human_bytes(sum(left))}) "
                     f"{'are' if len(left) != 1 else 'is'} left out: beyond --max-media-bytes "
                     f"({human_bytes(max_bytes)}); a video left out shows its first frame.")
    if len(infos) > MEDIA_RUNS:
        notes.append(f"Media of the first {MEDIA_RUNS} runs only.")
    return {"runs": runs, "blobs": inline, "max_bytes": max_bytes, "left_out": " ".join(notes)}


__all__ = ["DEFAULT_MAX_MEDIA_BYTES", "MEDIA_RUNS", "PER_NAME", "media_doc", "parse_bytes", "poster", "priority",
           "spread"]
