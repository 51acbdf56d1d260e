"""The OpenAPI 3.1 document of ``/api/v1/`` that ``tracker server`` serves at ``/api/v1/openapi.json``.

Written by hand, as a dict: :data:`WRITE_PATHS` (shipping, blobs, JSON
logging), :data:`KEY_PATHS` (whoami, keys) and :data:`READ_PATHS` (the
reading endpoints) make up :func:`document`. A test checks that every
``/api/v1/`` route of the app is in it, and docs/http-api.md tells the same in prose.
"""

from __future__ import annotations

from typing import Any

VERSION = "1"


def _error(description: str, **extra: Any) -> dict[str, Any]:
    props: dict[str, Any] = {"error": {"type": "string"}}
    props.update(extra)
    return {"description": description, "content": {"application/json": {"schema": {
        "type": "object", "required": ["error"], "properties": props}}}}


def _json(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": schema}}}


_RETRY = {"Retry-After": {"description": "seconds to wait", "schema": {"type": "integer"}}}
#: The answers every keyed endpoint may give.
COMMON_ERRORS: dict[str, Any] = {
    "401": _error("no key, or an unknown, revoked or expired one"),
    "429": {**_error("too many failed key checks from this address"), "headers": _RETRY},
    "503": {**_error("the store cannot be reached now"), "headers": _RETRY},
}
_RUN_ID = {"name": "run_id", "in": "path", "required": True,
           "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}}
_SHA = {"name": "sha", "in": "path", "required": True, "schema": {"type": "string", "pattern": "^[0-9a-f]{64}$"}}
_KEY_INFO = {"type": "object", "properties": {
    "id": {"type": "string"}, "name": {"type": "string"}, "scope": {"enum": ["read", "write", "admin"]},
    "projects": {"type": "array", "items": {"type": "string"}}, "expires": {"type": ["number", "null"]},
    "creator": {"type": "string"}, "created": {"type": "number"}, "revoked": {"type": ["number", "null"]},
    "last_used": {"type": ["number", "null"]}, "status": {"enum": ["active", "revoked", "expired"]}}}


def _op(summary: str, responses: dict[str, Any], *, scope: str = "read", **more: Any) -> dict[str, Any]:
    return {"summary": summary, "description": f"Needs a key of scope `{scope}` or more.",
            "security": [{"key": []}], "responses": {**responses, **COMMON_ERRORS}, **more}


WRITE_PATHS: dict[str, Any] = {
    "/api/v1/runs/{run_id}/segments": {"get": _op(
        "Bytes the server has of each segment of a run (an unknown run has none)",
        {"200": _json("segment file name -> bytes", {"type": "object", "properties": {
            "segments": {"type": "object", "additionalProperties": {"type": "integer"}}}})},
        parameters=[_RUN_ID])},
    "/api/v1/runs/{run_id}/segments/{segment}": {"post": _op(
        "Append a segment's complete lines from a byte offset",
        {"200": _json("the server's end of the segment after this request", {
            "type": "object", "properties": {"offset": {"type": "integer"}}}),
         "400": _error("a line fails its checks (nothing of the request written), a bad name or offset, or bytes "
                       "that differ from those the server has", line={"type": "integer"}),
         "403": _error("the key may not write this run (another key made it, or another project)"),
         "409": _error("offset is past what the server has: resume from offset", offset={"type": "integer"}),
         "413": _error("the body is over the cap (64 MiB)")},
        scope="write",
        parameters=[_RUN_ID, {"name": "segment", "in": "path", "required": True, "schema": {
            "type": "string", "pattern": r"^(edits/edits-)?[A-Za-z0-9][A-Za-z0-9._-]*\.jsonl$"}},
            {"name": "offset", "in": "query", "required": True, "schema": {"type": "integer", "minimum": 0}}],
        requestBody={"required": True, "content": {"application/octet-stream": {"schema": {
            "type": "string", "format": "binary", "description": "complete JSONL lines of the store format"}}}})},
    "/api/v1/blobs/sha256/{sha}": {
        "head": _op("Whether the server has a blob", {
            "200": {"description": "stored", "headers": {"Content-Length": {"schema": {"type": "integer"}}}},
            "404": {"description": "not stored"}}, parameters=[_SHA]),
        "put": _op("Store a blob by its SHA-256 (streamed; hashed as it arrives)", {
            "201": _json("stored", {"type": "object", "properties": {"sha256": {"type": "string"},
                                                                   "size": {"type": "integer"}}}),
            "200": _json("the server had it already", {"type": "object"}),
            "400": _error("the body's SHA-256 is another: nothing kept"),
            "413": _error("the blob is over the cap")}, scope="write", parameters=[_SHA],
            requestBody={"required": True, "content": {"application/octet-stream": {
                "schema": {"type": "string", "format": "binary"}}}})},
    "/api/v1/runs/{run_id}/log": {"post": _op(
        "Log metrics or records to a run started with POST /api/v1/runs", {
            "200": _json("how many records were written", {"type": "object", "properties": {
                "logged": {"type": "integer"}}}),
            "400": _error("a record fails its schema (names its index, schema and field); nothing written"),
            "403": _error("the key may not write this run"), "404": _error("no such run")},
        scope="write", parameters=[_RUN_ID], requestBody={"required": True, "content": {"application/json": {
            "schema": {"oneOf": [{"$ref": "#/components/schemas/LogItem"}, {
                "type": "object", "required": ["batch"], "properties": {"batch": {
                    "type": "array", "maxItems": 10000, "items": {"$ref": "#/components/schemas/LogItem"}}}}]}}}})},
    "/api/v1/runs/{run_id}/finish": {"post": _op(
        "End a run started with POST /api/v1/runs", {
            "200": _json("its status", {"type": "object", "properties": {"id": {"type": "string"},
                                                                        "status": {"type": "string"}}}),
            "403": _error("the key may not write this run"), "404": _error("no such run")},
        scope="write", parameters=[_RUN_ID], requestBody={"content": {"application/json": {"schema": {
            "type": "object", "properties": {"status": {"enum": ["finished", "failed", "stopped"]},
                                             "error": {"type": "string"}}}}}})},
}

#: ``POST /api/v1/runs`` (starting a run); the reading endpoints add ``get`` beside it.
RUNS_POST = _op("Start a run (the server writes it: for curl and other languages)", {
    "201": _json("the run's id", {"type": "object", "properties": {"id": {"type": "string"}}}),
    "400": _error("a field of the wrong type"), "403": _error("the project is not one of the key's"),
    "409": _error("a run of that id exists")}, scope="write", requestBody={
    "required": True, "content": {"application/json": {"schema": {"type": "object", "properties": {
        "project": {"type": "string"}, "name": {"type": "string"}, "config": {"type": "object"},
        "tags": {"type": "array", "items": {"type": "string"}}, "group": {"type": "string"},
        "job_type": {"type": "string"}, "notes": {"type": "string"},
        "id": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$"}}}}}})

KEY_PATHS: dict[str, Any] = {
    "/api/v1/whoami": {"get": _op("The key's own id, name, scope, projects and expiry", {
        "200": _json("the key", {"type": "object", "properties": {
            k: _KEY_INFO["properties"][k] for k in ("id", "name", "scope", "projects", "expires")}})})},
    "/api/v1/keys": {
        "get": _op("Every key of the store (never a secret)", {
            "200": _json("keys", {"type": "object", "properties": {"keys": {"type": "array", "items": _KEY_INFO}}}),
            "403": _error("not an admin key")}, scope="admin"),
        "post": _op("Make a key: the answer holds it once", {
            "201": _json("the new key", {"type": "object", "properties": {
                "id": {"type": "string"}, "key": {"type": "string"}, "name": {"type": "string"},
                "scope": {"type": "string"}, "projects": {"type": "array", "items": {"type": "string"}},
                "expires": {"type": ["number", "null"]}}}),
            "400": _error("a bad name, scope, projects or expires"), "403": _error("not an admin key")},
            scope="admin", requestBody={"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["name", "scope"], "properties": {
                    "name": {"type": "string"}, "scope": {"enum": ["read", "write", "admin"]},
                    "projects": {"type": "array", "items": {"type": "string"}},
                    "expires": {"type": "string", "description": "90d, 12h, 30m, 2w, 1y or never"}}}}}})},
    "/api/v1/keys/{key_id}": {"delete": _op("Revoke a key (its next request is refused)", {
        "200": _json("the key, revoked", _KEY_INFO), "400": _error("no such key"),
        "403": _error("not an admin key")}, scope="admin",
        parameters=[{"name": "key_id", "in": "path", "required": True, "schema": {"type": "string"}}])},
    "/api/v1/openapi.json": {"get": {"summary": "This document (no key needed)", "security": [],
                                     "responses": {"200": {"description": "OpenAPI 3.1"}}}},
}

_ENTRY = {"type": "object", "description": "a run: its info, the paths of NaN and infinities in it (sent as the "
          "strings \"NaN\", \"Infinity\", \"-Infinity\"), its schemas and per-metric figures", "properties": {
    "id": {"type": "string"},
    "info": {"type": "object", "description": "RunInfo's fields: id, name, project, status, created_at, ended_at, "
             "config, tags, error, env, writers, records, last_step, last_metrics, notes, summary, system, group, "
             "job_type"},
    "nonfinite": {"type": "array", "items": {"type": "array"}},
    "schemas": {"description": "records per schema (listing), or the schema names in order (one run)",
                "oneOf": [{"type": "object", "additionalProperties": {"type": "integer"}},
                          {"type": "array", "items": {"type": "string"}}]},
    "metrics": {"type": "object", "description": "per metric: count, first, first_step, last, last_step, min, "
                "min_step, max, max_step", "additionalProperties": {"type": "object"}}}}
_RANGE = {"name": "Range", "in": "header", "required": False, "schema": {"type": "string"},
          "description": "bytes=START-END: a part only (206)"}
_BYTES = {"description": "the bytes", "content": {"application/octet-stream": {"schema": {
    "type": "string", "format": "binary"}}}}
_NOT_FOUND = _error("no such run, or a prefix several runs share (their ids in candidates)",
                    candidates={"type": "array", "items": {"type": "string"}})
_FORBIDDEN = _error("the key may not read this run's project")

#: The reading endpoints (``open_store("https://...")``; :mod:`tracker.ui.remote_read`).
READ_PATHS: dict[str, Any] = {
    "/api/v1/runs": {"get": _op("Runs, newest first, a page at a time", {
        "200": _json("a page; next is the cursor of the page after (null: the last); total the runs the filters keep",
                     {"type": "object", "properties": {"runs": {"type": "array", "items": _ENTRY},
                                                       "next": {"type": ["string", "null"]},
                                                       "total": {"type": "integer"}}}),
        "400": _error("a bad parameter (a sort, cursor, limit or offset that cannot be used)")},
        parameters=[{"name": n, "in": "query", "required": False, "schema": {"type": "string"}}
                    for n in ("project", "status", "tag", "q", "group", "job_type", "sort", "cursor")]
        + [{"name": "limit", "in": "query", "required": False,
            "schema": {"type": "integer", "minimum": 1, "maximum": 10000, "default": 1000}},
           {"name": "offset", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 0}},
           {"name": "figures", "in": "query", "required": False, "schema": {"enum": ["1"]},
            "description": "1: each run's per-metric figures too"}])},
    "/api/v1/run": {"get": _op("One run by id, unique prefix or name", {
        "200": _json("the run", _ENTRY), "403": _FORBIDDEN, "404": _NOT_FOUND},
        parameters=[{"name": "ref", "in": "query", "required": True, "schema": {"type": "string"}}])},
    "/api/v1/runs/{run_id}": {"get": _op("One run by id or unique prefix", {
        "200": _json("the run", _ENTRY), "403": _FORBIDDEN, "404": _NOT_FOUND}, parameters=[_RUN_ID])},
    "/api/v1/runs/{run_id}/records": {"get": _op("A run's records in log order, streamed as JSON Lines", {
        "200": {"description": "one record a line: {step, time, schema, w, seq, data, nonfinite?}; the last line "
                "is {\"end\": n} (n records sent) or {\"error\": \"...\"}",
                "content": {"application/x-ndjson": {"schema": {"type": "string"}}}},
        "400": _error("a bad schema or after"), "403": _FORBIDDEN, "404": _NOT_FOUND},
        parameters=[_RUN_ID, {"name": "schema", "in": "query", "required": False, "schema": {"type": "string"}},
                    {"name": "after", "in": "query", "required": False, "schema": {"type": "string"},
                     "description": "JSON {writer: seq}: only what each writer logged after that sequence number"}])},
    "/api/v1/runs/{run_id}/metrics": {"get": _op("A run's metrics records as columns, bit for bit", {
        "200": {"description": "a JSON line {\"n\": N, \"columns\": [[name, dtype], ...]} (step <i8, then time and "
                "each metric <f8, NaN where a record lacks it), then each column's N little-endian values",
                "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}},
        "403": _FORBIDDEN, "404": _NOT_FOUND}, parameters=[_RUN_ID])},
    "/api/v1/runs/{run_id}/segments/{segment}": {"get": _op("A segment's bytes as the store holds them", {
        "200": _BYTES, "206": _BYTES, "403": _FORBIDDEN,
        "404": _error("no such run or segment, or a store that keeps records, not files (a database)")},
        parameters=[_RUN_ID, {"name": "segment", "in": "path", "required": True,
                              "schema": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9._-]*\.jsonl$"}},
                    _RANGE])},
    "/api/v1/runs/{run_id}/segments/edits/{segment}": {"get": _op("An edit segment's bytes (tags, notes, aliases "
                                                                   "changed after the fact)", {
        "200": _BYTES, "206": _BYTES, "403": _FORBIDDEN, "404": _error("no such run or edit segment")},
        parameters=[_RUN_ID, {"name": "segment", "in": "path", "required": True,
                              "schema": {"type": "string", "pattern": r"^edits-[A-Za-z0-9._-]*\.jsonl$"}}, _RANGE])},
    "/api/v1/blobs/sha256/{sha}": {"get": _op("A blob's bytes, streamed (the client checks their SHA-256)", {
        "200": _BYTES, "206": _BYTES, "400": _error("not a SHA-256"), "404": _error("no such blob")},
        parameters=[_SHA, _RANGE])},
    "/api/v1/registry": {"get": _op("Every named artifact: versions, aliases, producers and consumers", {
        "200": _json("the registry as derived data", {"type": "object", "properties": {
            "summary": {"type": "array", "description": "per name: project, name, type, last logged, aliases, "
                        "versions, latest version, size, producer, created"},
            "collections": {"type": "array", "items": {"type": "object"}},
            "io": {"type": "array", "description": "[outputs, inputs]: per run, the versions it logged and used"}}})})},
}


def document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of every ``/api/v1/`` path."""
    paths: dict[str, Any] = {}
    for part in (WRITE_PATHS, KEY_PATHS, READ_PATHS):
        for path, ops in part.items():
            paths.setdefault(path, {}).update(ops)
    paths.setdefault("/api/v1/runs", {})["post"] = RUNS_POST
    return {
        "openapi": "3.1.0",
        "info": {"title": "tracker server", "version": VERSION,
                 "description": "Logging and reading over HTTPS with a key: see docs/http-api.md."},
        "paths": dict(sorted(paths.items())),
        "components": {
            "securitySchemes": {"key": {"type": "http", "scheme": "bearer", "bearerFormat": "trk_<id>_<secret>"}},
            "schemas": {"LogItem": {"type": "object", "properties": {
                "step": {"type": "integer"}, "metrics": {"type": "object", "additionalProperties": {
                    "oneOf": [{"type": ["number", "boolean"]}, {"enum": ["NaN", "Infinity", "-Infinity"]}]}},
                "schema": {"type": "string"}, "data": {"type": "object"}}}},
        },
    }


__all__ = ["KEY_PATHS", "READ_PATHS", "RUNS_POST", "WRITE_PATHS", "document"]
