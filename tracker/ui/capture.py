"""What the dashboard shows of a run's captures, as plain JSON-ready data (no web framework here).

The dashboard's routes call these: the artifact list, the image gallery, the
system charts' series, and :func:`checked_blob`, which decides whether a
download may be served: only a blob that one of the run's records names,
found at its content address inside the store, whose bytes still hash to
that name.
"""

from __future__ import annotations

import math
import re
import time
from pathlib import Path
from typing import Any

from tracker.core.errors import StoreError, TrackerError

_SHA_RE = re.compile(r"[0-9a-f]{64}")
SYSTEM_FIELDS = ("cpu_percent", "process_cpu_percent", "memory_used_bytes", "memory_percent", "process_rss_bytes",
                 "disk_read_bytes", "disk_write_bytes", "net_sent_bytes", "net_recv_bytes")
GPU_FIELDS = ("utilization_percent", "memory_used_bytes", "temperature_c", "power_w", "energy_j")


def _num(v: Any) -> float | None:
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def blob_reader(view: Any) -> Any:
    """Where the bytes of ``view``'s blobs are read: a folder's blob store, else its store's ``blobs`` (the
    team's bucket), each with ``fetch`` (a checked local copy), ``exists`` and ``open``."""
    from tracker.capture.blobs import blobs_of

    return blobs_of(view)


def read_manifest(blobs: Any, sha: str) -> Any:
    """The folder manifest in blob ``sha``, through a blob store or any ``BlobReader``.

    :raises StoreError: the blob is missing, damaged or not a manifest.
    """
    if hasattr(blobs, "read_manifest"):
        return blobs.read_manifest(sha)
    from tracker.capture.blobs import Manifest

    with blobs.open(sha) as f:
        data = f.read()
    return Manifest.decode(data, sha, f"blob {sha}")


def artifacts_json(view: Any) -> list[dict[str, Any]]:
    """The run's artifacts in log order, with the files of each folder (from its manifest)."""
    if "artifact" not in view.schemas():
        return []
    out = []
    from tracker.capture.artifacts import artifacts

    blobs = blob_reader(view)
    for a in artifacts(view):
        row = {"name": a.name, "kind": a.kind, "size": a.size, "files": a.files, "sha256": a.sha256,
               "step": a.step, "time": a.time, "folder": a.folder, "reference": a.reference}
        if a.folder:
            try:
                row["members"] = [{"path": e.path, "size": e.size, "sha256": e.sha256}
                                  for e in read_manifest(blobs, a.sha256).files]
            except StoreError as exc:
                row["error"] = str(exc)
        out.append(row)
    _versions(view, out)
    return out


def _versions(view: Any, rows: list[dict[str, Any]]) -> None:
    """Each row's version of its named artifact (``qualified``, ``version``), from the store's registry."""
    try:
        registry = view.store.registry() if hasattr(view.store, "registry") else view.parent.registry()
    except (AttributeError, TrackerError):
        return
    project = view.info.project
    for row in rows:
        c = registry.collections.get((project, row["name"]))
        v = c.version_of(row["sha256"]) if c is not None else None
        if v is not None:
            row["qualified"], row["version"] = c.qualified, v.version


def images_json(view: Any) -> dict[str, list[dict[str, Any]]]:
    """Image records by name, each list in log order: step, sha256, width, height, mode, caption."""
    if "image" not in view.schemas():
        return {}
    out: dict[str, list[dict[str, Any]]] = {}
    for r in view.records("image"):
        d = r.data
        out.setdefault(d.get("name", ""), []).append(
            {"step": r.step, "time": r.time, "sha256": d.get("sha256"), "width": d.get("width"),
             "height": d.get("height"), "mode": d.get("mode"), "caption": d.get("caption", "")})
    return out


#: CPU fields whose first sample of a process can be psutil's "no baseline yet" 0.0.
_CPU_FIELDS = ("cpu_percent", "process_cpu_percent")


def system_json(view: Any) -> dict[str, Any]:
    """Series of the system samples: x = the sample's time (epoch seconds); NaN and missing as ``None``.

    The first sample of each writer (each process that sampled) does not show a CPU reading of
    exactly 0: psutil answers 0.0 when it has no earlier reading to measure from, which is no
    measurement at all.

    ``{"system": {field: {"x": [...], "y": [...]}}, "gpus": {"0 Name": {field: {...}}},
    "start": created_at, "end": ended_at or the last sample}``
    """
    present = view.schemas()
    info = view.info
    out: dict[str, Any] = {"system": {}, "gpus": {}, "start": info.created_at, "end": info.ended_at}
    last = info.created_at
    if "system" in present:
        recs = list(view.records("system"))
        xs = [r.time for r in recs]
        seen: set[str] = set()
        first = []
        for r in recs:
            first.append(r.writer not in seen)
            seen.add(r.writer)
        for f in SYSTEM_FIELDS:
            ys = [_num(r.data.get(f)) for r in recs]
            if f in _CPU_FIELDS:
                ys = [None if is_first and y == 0 else y for y, is_first in zip(ys, first, strict=True)]
            if any(y is not None for y in ys):
                out["system"][f] = {"x": xs, "y": ys}
        if xs:
            last = max(xs) if last is None else max(last, max(xs))
    if "system.gpu" in present:
        by_gpu: dict[str, list[Any]] = {}
        for r in view.records("system.gpu"):
            label = f"GPU {r.data.get('index')}" + (f" {r.data['name']}" if r.data.get("name") else "")
            by_gpu.setdefault(label, []).append(r)
        for label, recs in by_gpu.items():
            xs = [r.time for r in recs]
            out["gpus"][label] = {f: {"x": xs, "y": [_num(r.data.get(f)) for r in recs]} for f in GPU_FIELDS}
            if xs:
                last = max(xs) if last is None else max(last, max(xs))
    if out["end"] is None:
        out["end"] = time.time() if info.status == "running" else last
    return out


def checked_blob(view: Any, sha: str) -> tuple[Path, dict[str, Any]]:
    """The path of blob ``sha`` if run ``view`` refers to it and its bytes hash to ``sha``.

    :returns: the blob's path and what the run says of it (``name``, ``kind``,
        ``size``, ``media_type``); over the team store the path is the bucket's object
        fetched into the local cache (size and hash checked before it is kept).
    :raises TrackerError: ``sha`` is not a hash, or the run names no such blob
        (the dashboard answers 404); :class:`StoreError`: the blob is missing
        or damaged (it answers 500 naming it).
    """
    from tracker.capture.blobs import file_problem

    if not isinstance(sha, str) or not _SHA_RE.fullmatch(sha):
        raise TrackerError(f"not a sha256: {sha!r}")
    found: dict[str, Any] | None = None
    present = view.schemas()
    blobs = blob_reader(view)
    if "image" in present:
        for r in view.records("image"):
            if r.data.get("sha256") == sha:
                found = {"name": f"{r.data.get('name')}.png", "kind": "image", "size": None,
                         "media_type": "image/png"}
                break
    if found is None and "artifact" in present:
        for r in view.records("artifact"):
            d = r.data
            if d.get("reference"):
                continue  # a referenced file lives outside the store: never served
            if d.get("sha256") == sha and not d.get("folder"):
                found = {"name": d.get("name"), "kind": d.get("kind"), "size": d.get("size"),
                         "media_type": "application/octet-stream"}
            elif d.get("folder"):
                try:
                    members = read_manifest(blobs, d["sha256"]).files
                except (StoreError, KeyError):
                    continue
                for e in members:
                    if e.sha256 == sha:
                        found = {"name": e.path.rsplit("/", 1)[-1], "kind": d.get("kind"), "size": e.size,
                                 "media_type": "application/octet-stream"}
    if found is None and "table" in present:
        from tracker.capture.cells import table_images

        for name, row, _column, cell in table_images(view):
            if cell["sha256"] == sha:
                found = {"name": f"{name}-{row}.png", "kind": "image", "size": None, "media_type": "image/png"}
                break
    if found is None:
        raise TrackerError(f"run {view.id} names no stored file {sha}")
    try:
        path = blobs.fetch(sha, found["size"])  # over the team store: from the bucket, checked, into the cache
    except StoreError as exc:
        raise StoreError(f"run {view.id}: {exc}") from None
    problem, size = file_problem(path, sha)
    if problem is None and found["size"] is not None and size != found["size"]:
        problem = f"blob {path} has {size} bytes, the record says {found['size']}"
    if problem is not None:
        raise StoreError(problem)
    found["size"] = size
    return path, found


_SYSTEM_CHARTS = (
    ("CPU", "%", (("cpu_percent", "machine"), ("process_cpu_percent", "this process")), 1.0),
    ("Memory", "GiB", (("memory_used_bytes", "machine used"), ("process_rss_bytes", "process RSS")), 2**-30),
    ("Disk since start", "MiB", (("disk_read_bytes", "read"), ("disk_write_bytes", "written")), 2**-20),
    ("Network since start", "MiB", (("net_recv_bytes", "received"), ("net_sent_bytes", "sent")), 2**-20),
)
_GPU_CHARTS = (
    ("utilization", "%", "utilization_percent", 1.0),
    ("memory", "GiB", "memory_used_bytes", 2**-30),
    ("power", "W", "power_w", 1.0),
    ("energy", "kWh", "energy_j", 1 / 3.6e6),
    ("temperature", "°C", "temperature_c", 1.0),
)


def system_figures(view: Any) -> list[dict[str, Any]]:
    """The system section's charts as figure specs (the panel vocabulary's ``LineChart``).

    x is clock time over the run's whole duration (its start to its end, or to now while it
    runs), y in the unit of the chart's label; a figure no sample holds is left out.
    """
    from tracker.core.figures import LineChart, Series

    data = system_json(view)
    span = None
    if data["start"] is not None and data["end"] is not None and data["end"] >= data["start"]:
        span = (data["start"], data["end"])
    axis = {"x_label": "time", "x_time": True, "x_range": span}
    figs = []
    sysd = data["system"]
    for title, unit, fields, scale in _SYSTEM_CHARTS:
        series = [Series(label, [math.nan if y is None else y * scale for y in sysd[f]["y"]], sysd[f]["x"])
                  for f, label in fields if f in sysd]
        if series:
            figs.append(LineChart(title, series, y_label=unit, **axis).to_json())
    for label, fields in data["gpus"].items():
        for title, unit, f, scale in _GPU_CHARTS:
            s = fields[f]
            if any(y is not None for y in s["y"]):
                ys = [math.nan if y is None else y * scale for y in s["y"]]
                figs.append(LineChart(f"{label}: {title}", [Series(title, ys, s["x"])], y_label=unit,
                                      **axis).to_json())
    return figs
