"""``tracker.Api()``: read runs back the way W&B's public API (``wandb.Api()``) does.

``Api().runs("project")`` lists a project's runs, ``Api().run("project/ID")``
one run; a run has ``.id``, ``.name``, ``.project``, ``.state``, ``.config``,
``.summary``, ``.tags``, ``.notes``, ``.created_at``, ``.history()`` (a pandas
DataFrame, one row per step, with ``_step`` and ``_timestamp``) and
``.scan_history()``. ``Api().artifact("project/name:alias")`` gives a version of a
named artifact. W&B's ``entity/`` part of a path is accepted and ignored: the store is local.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from tracker.core.errors import RunNotFound

if TYPE_CHECKING:
    from tracker.read.protocol import StoreReader


class Api:
    """W&B's public API over the store.

    :param overrides: accepted for W&B scripts; ``{"store": PATH}`` picks the store.
    :param store: the store folder, a ``postgresql://`` URL of the team database or an ``https://`` URL of a
        ``tracker server`` (default: TRACKER_STORE, tracker.toml, ./.tracker); read through the reading protocol.
    :param api_key: the key a ``tracker server`` is read with (default: ``TRACKER_API_KEY`` or ``tracker login``).
    """

    def __init__(self, overrides: Mapping[str, Any] | None = None, timeout: Any = None, api_key: str | None = None,
                 *, store: str | os.PathLike[str] | None = None) -> None:
        from tracker.store import open_store

        if store is None and overrides:
            store = overrides.get("store")
        if api_key and isinstance(store, str) and store.lower().startswith(("http://", "https://")):
            from tracker.remote.reading import open_remote_store

            self._store: StoreReader = open_remote_store(store, api_key=api_key)  # a tracker server, this key
        else:
            self._store = open_store(store)

    def runs(self, path: str | None = None, filters: Mapping[str, Any] | None = None, order: str = "-created_at",
             per_page: int = 50, include_sweeps: bool = True) -> list[ApiRun]:
        """The runs of a project (``"project"`` or ``"entity/project"``; ``None``: every run), newest first.

        :param filters: W&B's filter form for simple cases: ``{"state": "finished"}``,
            ``{"config.lr": 0.1}``, ``{"tags": {"$in": ["a"]}}``, ``{"display_name": "x"}``.
        """
        project = _project_of(path)
        runs = [ApiRun(self._store, info) for info in self._store.runs(project=project)]
        if filters:
            runs = [r for r in runs if all(_matches(r, k, v) for k, v in filters.items())]
        if order.lstrip("+-") == "created_at" and not order.startswith("-"):
            runs.reverse()
        return runs

    def run(self, path: str) -> ApiRun:
        """One run: ``"ID"``, ``"project/ID"``, ``"entity/project/ID"`` or ``"entity/project/runs/ID"``.

        :raises RunNotFound: no such run (or it is of another project).
        """
        parts = [p for p in str(path).split("/") if p]
        if not parts:
            raise RunNotFound(f"Api().run({path!r}): expected 'project/ID'")
        if len(parts) >= 2 and parts[-2] == "runs":
            del parts[-2]
        run_id, project = parts[-1], parts[-2] if len(parts) >= 2 else None
        view = self._store.run(run_id)
        if project is not None and view.info.project != project:
            raise RunNotFound(f"Api().run({path!r}): run {view.info.id} is of project {view.info.project!r}, "
                              f"not {project!r}")
        return ApiRun(self._store, view.info)

    def artifact(self, name: str, type: str | None = None) -> Any:
        """A version of a named artifact: ``"project/name:alias"``, ``"entity/project/name:v3"``, ``"name"``
        (its latest); a :class:`tracker.Artifact` (``download()``, ``files()``, ``version``, ``aliases``).

        :raises TrackerError: an unknown name, version or alias (naming what exists), or another type.
        """
        return self._store.artifact(name, type=type)  # type: ignore[attr-defined]

    def artifact_exists(self, name: str, type: str | None = None) -> bool:
        """Whether :meth:`artifact` finds ``name``."""
        from tracker.core.errors import TrackerError

        try:
            self.artifact(name, type)
        except TrackerError:
            return False
        return True

    def artifact_versions(self, type_name: str, name: str) -> list[Any]:
        """Every version of the named artifact ``name`` (``project/name``), ``v0`` first."""
        return self.artifact_collection(type_name, name).versions

    def artifact_collection(self, type_name: str, name: str) -> Any:
        """The named artifact ``name``: versions, aliases, their history (:class:`tracker.ArtifactCollection`)."""
        from tracker.core.errors import TrackerError

        c = self._store.artifact_collection(name)  # type: ignore[attr-defined]
        if type_name and c.type != type_name:
            raise TrackerError(f"artifact {c.qualified!r} is of type {c.type!r}, not {type_name!r}")
        return c

    def projects(self, entity: str | None = None) -> list[str]:
        """The projects of the store's runs."""
        return sorted({r.project for r in self._store.runs() if r.project is not None})


def _project_of(path: str | None) -> str | None:
    if path is None:
        return None
    parts = [p for p in str(path).split("/") if p]
    return parts[-1] if parts else None


def _matches(run: ApiRun, key: str, want: Any) -> bool:
    if key == "state":
        value: Any = run.state
    elif key in ("display_name", "name"):
        value = run.name
    elif key == "tags":
        value = run.tags
    else:
        head, _, rest = key.partition(".")
        source = {"config": run.config, "summary_metrics": run.summary, "summary": run.summary}.get(head)
        if source is None:
            return False
        value = source
        for part in rest.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
    if isinstance(want, Mapping):
        return all(_op(value, op, arg) for op, arg in want.items())
    return value == want or (isinstance(value, list) and want in value)


def _op(value: Any, op: str, arg: Any) -> bool:
    try:
        if op == "$in":
            return any(v in arg for v in value) if isinstance(value, list) else value in arg
        if op == "$eq":
            return value == arg
        if op == "$ne":
            return value != arg
        if op == "$gt":
            return value > arg
        if op == "$gte":
            return value >= arg
        if op == "$lt":
            return value < arg
        if op == "$lte":
            return value <= arg
    except TypeError:
        return False
    raise ValueError(f"Api().runs(filters=...): operator {op!r} is not offered ($in, $eq, $ne, $gt, $gte, $lt, $lte)")


class ApiRun:
    """A run as W&B's public API shows it."""

    def __init__(self, store: Any, info: Any) -> None:
        self._store = store
        self._info = info
        self.id: str = info.id
        self.name: str | None = info.name
        self.display_name = info.name
        self.project: str | None = info.project
        self.entity = None
        self.state: str = info.status
        self.config: dict[str, Any] = dict(info.config)
        self.tags: list[str] = list(info.tags)
        self.notes: str | None = info.notes
        self.path = [self.project, self.id]
        #: The last value of every metric, with the values set on ``run.summary`` (and define_metric's) over them.
        self.summary: dict[str, Any] = {**info.last_metrics, **info.summary}

    @property
    def created_at(self) -> str | None:
        """The start time as W&B gives it: ISO 8601 in UTC."""
        t = self._info.created_at
        return None if t is None else datetime.datetime.fromtimestamp(t, datetime.timezone.utc).isoformat()

    def scan_history(self, keys: list[str] | None = None, page_size: int = 1000, min_step: int | None = None,
                     max_step: int | None = None) -> Iterator[dict[str, Any]]:
        """One dict per step (records of one step merged), with ``_step`` and ``_timestamp``."""
        for row in self._rows():
            step = row["_step"]
            if (min_step is not None and step < min_step) or (max_step is not None and step >= max_step):
                continue
            if keys is not None:
                if not all(k in row for k in keys):
                    continue
                row = {k: row[k] for k in ("_step", *keys)}
            yield row

    def history(self, samples: int = 500, keys: list[str] | None = None, x_axis: str = "_step",
                pandas: bool = True, stream: str = "default") -> Any:
        """The metrics as a pandas DataFrame, one row per step (at most ``samples`` rows, evenly spread)."""
        rows = list(self.scan_history(keys=keys))
        if samples and len(rows) > samples:
            every = len(rows) / samples
            rows = [rows[int(i * every)] for i in range(samples)]
        if not pandas:
            return rows
        import pandas as pd

        return pd.DataFrame(rows)

    def _rows(self) -> list[dict[str, Any]]:
        by_step: dict[int, dict[str, Any]] = {}
        view = self._store.run(self.id)
        for rec in view.records(schema="metrics"):
            row = by_step.get(rec.step)
            if row is None:
                row = by_step[rec.step] = {"_step": rec.step, "_timestamp": rec.time}
            row.update(rec.data)
        if "text" in view.schemas():  # strings logged with the metrics: columns of their own, as in W&B
            for rec in view.records(schema="text"):
                row = by_step.setdefault(rec.step, {"_step": rec.step, "_timestamp": rec.time})
                row[rec.data["name"]] = rec.data["value"]
        return [by_step[s] for s in sorted(by_step)]

    def __repr__(self) -> str:
        return f"<Run {self.project}/{self.id} ({self.state})>"
