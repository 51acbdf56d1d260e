"""The JSON of the reading endpoints (``/api/v1/runs...``): runs' entries and records, both ways, exactly.

The server (:mod:`tracker.ui.remote_read`) encodes what the reading protocol
gives; the client (:mod:`tracker.remote.reading`) decodes it back into the same
:class:`~tracker.RunInfo`, figures and :class:`~tracker.Record`. JSON has no NaN
nor infinity: such floats travel as the store's strings (``"NaN"``,
``"Infinity"``, ``"-Infinity"``) with the paths where they stand
(``nonfinite``), so a string that merely reads ``"NaN"`` stays a string.

A run entry::

    {"id": "...", "info": {RunInfo's fields}, "nonfinite": [[field, key, ...], ...],
     "schemas": {name: records} | [names in order], "metrics": {name: figures}?, "artifacts": {...}?}

A record (one line of ``GET /api/v1/runs/{id}/records``, JSON Lines)::

    {"step": 3, "time": 1700000000.5, "schema": "metrics", "w": "writer id", "seq": 7, "data": {...},
     "nonfinite": [[key, ...], ...]?}

and the stream ends with ``{"end": <records sent>}`` (or ``{"error": "..."}``), so
a cut connection is never taken for the end of a run.
"""

from __future__ import annotations

from typing import Any

import orjson

from tracker.core.errors import StoreError
from tracker.core.format import decode_nonfinite, encode_nonfinite, nonfinite_paths, restore_nonfinite
from tracker.core.records import RUNINFO_FIELDS, Record, RunInfo, run_info_from_values

#: The media type of the records stream.
JSONL = "application/x-ndjson"


def encode_info(info: RunInfo) -> tuple[dict[str, Any], list[list[Any]]]:
    """The info's fields as strict JSON data, and the paths of the NaN and infinities in them."""
    values = {name: getattr(info, name) for name in RUNINFO_FIELDS}
    nf = nonfinite_paths(values)
    return (encode_nonfinite(values) if nf else values), nf


def decode_info(values: Any, nonfinite: Any = None) -> RunInfo:
    """The :class:`RunInfo` of :func:`encode_info`'s output.

    :raises StoreError: fields that are not the RunInfo's (a server of another version).
    """
    if not isinstance(values, dict):
        raise StoreError(f"the server sent a run's info as {type(values).__name__}, expected an object")
    if nonfinite:
        restore_nonfinite(values, nonfinite)
    try:
        return run_info_from_values([values.get(name, _DEFAULTS[name]) for name in RUNINFO_FIELDS])
    except (KeyError, ValueError) as exc:
        raise StoreError(f"the server sent a run's info this tracker cannot read: {exc}") from None


_DEFAULTS = {name: getattr(RunInfo(id=""), name) for name in RUNINFO_FIELDS}


def entry_json(info: RunInfo, schemas: Any, metrics: dict[str, Any] | None = None,
               artifacts: dict[str, Any] | None = None) -> dict[str, Any]:
    """A run's entry (see the module's docstring)."""
    values, nf = encode_info(info)
    out: dict[str, Any] = {"id": info.id, "info": values, "nonfinite": nf, "schemas": schemas}
    if metrics is not None:
        out["metrics"] = encode_nonfinite(metrics)
    if artifacts is not None:
        out["artifacts"] = artifacts
    return out


def decode_figures(metrics: Any) -> dict[str, dict[str, Any]]:
    """Per-metric figures as sent (only NaN and infinities are strings in them)."""
    return decode_nonfinite(metrics) if isinstance(metrics, dict) else {}


def record_line(rec: Record) -> bytes:
    """One record as a line of the records stream."""
    doc: dict[str, Any] = {"step": rec.step, "time": rec.time, "schema": rec.schema, "w": rec.writer,
                           "seq": rec.seq, "data": rec.data}
    line = orjson.dumps(doc, option=orjson.OPT_NON_STR_KEYS)
    if b"null" not in line:  # orjson writes NaN and infinities as null: none here
        return line + b"\n"
    nf = nonfinite_paths(rec.data)
    if nf:
        doc["data"] = encode_nonfinite(rec.data)
        doc["nonfinite"] = nf
        line = orjson.dumps(doc, option=orjson.OPT_NON_STR_KEYS)
    return line + b"\n"


def parse_record(doc: dict[str, Any]) -> Record:
    """The :class:`Record` of one line of the stream (already parsed)."""
    data = doc.get("data")
    if not isinstance(data, dict):
        raise StoreError("the server sent a record without its data")
    nf = doc.get("nonfinite")
    if nf:
        restore_nonfinite(data, nf)
    return Record(doc.get("step"), doc.get("time"), doc.get("schema"), data, doc.get("w") or "", doc.get("seq") or 0)


__all__ = ["JSONL", "decode_figures", "decode_info", "encode_info", "entry_json", "parse_record", "record_line"]
