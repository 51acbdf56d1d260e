"""The server's own writers, for clients that log by JSON (``curl``, the JavaScript client, any language).

``POST /api/v1/runs`` starts a run with :func:`tracker.start_run` on the
store the server writes (the served folder, or the spool of a database
store); the server holds one :class:`tracker.Run` per run id and
``/log`` and ``/finish`` go through it, so every value takes the checks and
the line format of a local ``run.log``. A run whose writer the server does
not hold (the server restarted meanwhile) is resumed on its next call (a
``writer_started`` segment, as any resume); when the server stops, each
open run is ended as ``crashed``, saying so, and its next call resumes it.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from tracker.core.errors import SchemaError, TrackerError
from tracker.core.format import SPECIAL_IN, check_run_id
from tracker.core.values import MAX_INT, check_metrics

#: How many records one ``/log`` request may hold.
MAX_BATCH = 10_000
_ITEM_KEYS = {"step", "metrics", "schema", "data"}
_RUN_KEYS = {"project", "name", "config", "tags", "group", "job_type", "id", "notes"}
_FINISH = ("finished", "failed", "stopped")


class BadRequest(TrackerError):
    """A request that cannot be logged as it is (HTTP 400); nothing of it was written."""


def _run_options() -> dict[str, Any]:
    # The server's own process is not the run's: no console, environment or system figures of it.
    return {"system_metrics": False, "console": False, "environment": False}


class Writers:
    """One :class:`tracker.Run` per run id, started, resumed and finished for JSON clients.

    :param root: the store folder the runs are written to.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self._runs: dict[str, Any] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def _lock(self, run_id: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault(run_id, threading.Lock())

    @staticmethod
    def fields(body: Any) -> dict[str, Any]:
        """The fields of ``POST /api/v1/runs`` checked for their JSON types.

        :raises BadRequest: naming the field.
        """
        if not isinstance(body, dict):
            raise BadRequest(f"expected a JSON object with project, name, config, tags, group, job_type, id; "
                             f"given {type(body).__name__}")
        unknown = sorted(set(body) - _RUN_KEYS)
        if unknown:
            raise BadRequest(f"unknown field {unknown[0]!r}: expected {', '.join(sorted(_RUN_KEYS))}")
        for key in ("project", "name", "group", "job_type", "id", "notes"):
            if body.get(key) is not None and not isinstance(body[key], str):
                raise BadRequest(f"{key}: expected a string, given {type(body[key]).__name__}")
        if body.get("config") is not None and not isinstance(body["config"], dict):
            raise BadRequest(f"config: expected an object, given {type(body['config']).__name__}")
        tags = body.get("tags")
        if tags is not None and (not isinstance(tags, list) or not all(isinstance(t, str) for t in tags)):
            raise BadRequest("tags: expected a list of strings")
        if body.get("id") is not None:
            try:
                check_run_id(body["id"])
            except TrackerError as exc:
                raise BadRequest(f"id: {exc}") from None
        return body

    def start(self, fields: dict[str, Any]) -> Any:
        """Start a new run from checked :meth:`fields`; returns it.

        :raises TrackerError: the id exists already (the message says so), a bad value.
        """
        from tracker.write.api import start_run

        run_id = fields.get("id") or None
        try:
            run = start_run(fields.get("project"), fields.get("name"), config=fields.get("config"),
                                    tags=fields.get("tags"), store=self.root, run_id=run_id,
                                    notes=fields.get("notes"), group=fields.get("group"),
                                    job_type=fields.get("job_type"), **_run_options())
        except (TypeError, SchemaError) as exc:
            raise BadRequest(str(exc)) from None
        with self._guard:
            self._runs[run.id] = run
        return run

    def _run(self, run_id: str) -> Any:
        """The run ``run_id`` this server writes: held, else resumed (it exists in the store)."""
        from tracker.write.api import start_run

        run = self._runs.get(run_id)
        if run is not None and run.status == "running":
            return run
        if not (self.root / "runs" / check_run_id(run_id)).is_dir():
            raise TrackerError(f"no run {run_id} in this store")
        run = start_run(store=self.root, run_id=run_id, resume=True, **_run_options())
        with self._guard:
            self._runs[run_id] = run
        return run

    @staticmethod
    def items(body: Any) -> list[dict[str, Any]]:
        """The records of a ``/log`` body (``{"step", "metrics"}`` or ``{"batch": [...]}``), checked, unwritten.

        Each item becomes ``{"step", "metrics", "schema", "data"}`` with its values as they will be written.

        :raises BadRequest: naming the record's index, its schema and the field.
        """
        if not isinstance(body, dict):
            raise BadRequest(f"expected a JSON object: {{\"metrics\": {{...}}}} or {{\"batch\": [...]}}, given "
                             f"{type(body).__name__}")
        if "batch" in body:
            if set(body) != {"batch"}:
                raise BadRequest("a body with batch holds nothing else")
            batch = body["batch"]
            if not isinstance(batch, list):
                raise BadRequest(f"batch: expected a list of records, given {type(batch).__name__}")
            if len(batch) > MAX_BATCH:
                raise BadRequest(f"batch: at most {MAX_BATCH} records per request, given {len(batch)}")
        else:
            batch = [body]
        from tracker.host.host import get_host

        host = get_host()
        out = []
        for i, item in enumerate(batch):
            where = f"record {i}"
            if not isinstance(item, dict):
                raise BadRequest(f"{where}: expected an object, given {type(item).__name__}")
            unknown = sorted(set(item) - _ITEM_KEYS)
            if unknown:
                raise BadRequest(f"{where}: unknown field {unknown[0]!r}: expected step, metrics, schema, data")
            step = item.get("step")
            if step is not None and (type(step) is not int or not -MAX_INT <= step <= MAX_INT):
                raise BadRequest(f"{where}: step: expected an int within ±2**53, given {step!r}")
            metrics, schema, data = item.get("metrics"), item.get("schema"), item.get("data")
            if metrics is None and schema is None:
                raise BadRequest(f"{where}: expected metrics, or schema and data")
            if metrics is not None and schema is not None and step is None:
                raise BadRequest(f"{where}: a record with both metrics and a schema needs its step")
            entry: dict[str, Any] = {"step": step, "metrics": None, "schema": None, "data": None}
            try:
                if metrics is not None:
                    if isinstance(metrics, dict):  # JSON has no NaN or infinities: their store strings stand for them
                        metrics = {k: SPECIAL_IN.get(v, v) if type(v) is str else v for k, v in metrics.items()}
                    entry["metrics"] = check_metrics(metrics)
                if schema is not None:
                    if not isinstance(schema, str):
                        raise BadRequest(f"{where}: schema: expected a schema name, given {type(schema).__name__}")
                    entry["schema"] = schema
                    entry["data"] = host.schema(schema).validate(data if data is not None else {})
            except SchemaError as exc:
                raise BadRequest(f"{where}: {exc}") from None
            out.append(entry)
        return out

    def log(self, run_id: str, items: list[dict[str, Any]]) -> int:
        """Write checked :meth:`items` to run ``run_id``; returns how many records were written."""
        with self._lock(run_id):
            run = self._run(run_id)
            n = 0
            for item in items:
                if item["metrics"] is not None:
                    run.log(item["metrics"], step=item["step"])
                    n += 1
                if item["schema"] is not None:
                    run.log_record(item["schema"], item["data"], step=item["step"])
                    n += 1
            return n

    def finish(self, run_id: str, body: Any) -> str:
        """End run ``run_id`` (``{"status"?, "error"?}``); returns its status.

        :raises BadRequest: a bad status or error.
        """
        body = body if body is not None else {}
        if not isinstance(body, dict) or set(body) - {"status", "error"}:
            raise BadRequest('expected {"status"?: "finished"|"failed"|"stopped", "error"?: "..."}')
        status = body.get("status") or "finished"
        if status not in _FINISH:
            raise BadRequest(f"status: expected one of {', '.join(_FINISH)}, given {str(status)[:40]!r}")
        error = body.get("error")
        if error is not None and not isinstance(error, str):
            raise BadRequest(f"error: expected a string, given {type(error).__name__}")
        with self._lock(run_id):
            run = self._run(run_id)
            run.finish(status, {"type": "Error", "message": error, "traceback": ""} if error else None)
            with self._guard:
                self._runs.pop(run_id, None)
        return status

    def close(self) -> None:
        """End every open run as ``crashed`` (the server stops); its next call resumes it."""
        with self._guard:
            runs, self._runs = list(self._runs.values()), {}
        for run in runs:
            try:
                run.finish("crashed", {"type": "ServerStopped", "traceback": "",
                                       "message": "the server stopped while the run was open; its next call "
                                                  "resumes it"})
            except TrackerError:
                pass


__all__ = ["MAX_BATCH", "BadRequest", "Writers"]
