"""A run's ``config`` and ``summary`` as W&B shows them, and the W&B names tracker does not offer.

``run.config`` and ``run.summary`` write their changes as edit events (see
:mod:`tracker.lifecycle`). :mod:`tracker.write.api` builds them; :mod:`tracker.integrations.wandb.init`
re-exports them, so that the embedded API never imports the W&B layer.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from tracker.core.errors import TrackerError

if TYPE_CHECKING:
    from tracker.write.wandb.logging import WandbExtras

#: A :class:`tracker.Run` (the run API imports this module, so it is not imported back here).
Run = Any

_extras_lock = threading.Lock()


class UnsupportedError(TrackerError, AttributeError):
    """A W&B call that tracker does not offer; the message says what to use instead.

    An :class:`AttributeError` too, so that ``hasattr(tracker, "watch")`` and
    duck-typing code see a missing name, while a call still reads the message.
    """


#: W&B names tracker does not offer, and what to use instead.
UNSUPPORTED: dict[str, str] = {
    "link_artifact": "promote a version with an alias: tracker.set_alias('name:v3', 'prod') "
                     "(or `tracker artifact alias name:v3 prod`)",
    "Molecule": "log the file with run.log_artifact(path)",
    "plot": "plugins draw figures in the dashboard (the tracker_panels hook)",
    "plot_table": "plugins draw figures in the dashboard (the tracker_panels hook)",
    "restore": "use tracker.open_store().run(ID).copy_artifact(name, dest)",
    "controller": "agents share the sweep through its storage: run `tracker agent SWEEP_ID` (docs/sweeps.md)",
    "log_code": "the run records its git commit and command line in its env",
    "mark_preempting": "resume a run with tracker.init(id=ID, resume='allow')",
    "use_run": "read a run with tracker.open_store().run(ID)",
}


def unsupported(name: str, owner: str = "tracker") -> UnsupportedError:
    """The error for W&B's ``name``."""
    return UnsupportedError(f"{owner}.{name}() is a W&B call that tracker does not offer: "
                            f"{UNSUPPORTED[name]} (see docs/wandb.md)")


# --- run.config, run.summary --------------------------------------------------------------------

class _ReadsAsDict:
    """Dict reads (``[k]``, ``.k``, ``in``, iteration, ``len``, ``get``, ``keys``, ``values``, ``items``,
    ``as_dict``) over the dict that ``_mapping()`` gives."""

    #: What the values are, in the error for a missing attribute (``run config has no key 'x'``).
    _what = "mapping"

    def _mapping(self) -> dict[str, Any]:
        raise NotImplementedError

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_values", "_run"):  # not set yet: no key lookup
            raise AttributeError(name)
        values = self._mapping()
        try:
            return values[name]
        except KeyError:
            raise AttributeError(f"{self._what} has no key {name!r} (keys: "
                                 f"{', '.join(sorted(values)) or 'none'})") from None

    def __getitem__(self, key: str) -> Any:
        return self._mapping()[key]

    def __contains__(self, key: object) -> bool:
        return key in self._mapping()

    def __iter__(self) -> Iterator[str]:
        return iter(self._mapping())

    def __len__(self) -> int:
        return len(self._mapping())

    def get(self, key: str, default: Any = None) -> Any:
        """The value of ``key``, or ``default``."""
        return self._mapping().get(key, default)

    def keys(self) -> Any:
        """The keys."""
        return self._mapping().keys()

    def values(self) -> Any:
        """The values."""
        return self._mapping().values()

    def items(self) -> Any:
        """The ``(key, value)`` pairs."""
        return self._mapping().items()

    def as_dict(self) -> dict[str, Any]:
        """A copy as a plain dict."""
        return dict(self._mapping())


class RunConfig(_ReadsAsDict):
    """A run's config with attribute and item access; changes are appended as edit events.

    ``run.config.lr``, ``run.config["lr"]``, ``run.config.update({"bs": 64})``,
    ``run.config.bs = 64``. Values are JSON values (nested dicts and lists).
    """

    _what = "run config"

    def __init__(self, run: Run, values: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_run", run)
        object.__setattr__(self, "_values", dict(values))

    def _write(self, data: dict[str, Any]) -> None:
        from tracker.core.urls import redact_urls
        from tracker.core.values import plain_config
        from tracker.write.edits import check_values, write_edit

        # A database URL's password is masked before it is stored (and so in what run.config reads back).
        data = redact_urls(check_values(plain_config(data), "config"))
        changed = {k: v for k, v in data.items() if k not in self._values or self._values[k] != v}
        if changed:
            write_edit(self._run.path, {"config": changed}, fsync=self._run._host.config.fsync,
                       config=self._run._host.config)
            self._values.update(changed)

    def update(self, values: Mapping[str, Any] | Any = None, allow_val_change: bool | None = None,
               **more: Any) -> None:
        """Set several keys at once (one event); ``values`` may also be an argparse Namespace."""
        self._write({**_as_mapping(values, "config.update"), **more})

    def setdefaults(self, values: Mapping[str, Any]) -> None:
        """Set the keys of ``values`` that the config does not have yet."""
        self._write({k: v for k, v in _as_mapping(values, "config.setdefaults").items() if k not in self._values})

    def __setattr__(self, name: str, value: Any) -> None:
        self._write({name: value})

    def _mapping(self) -> dict[str, Any]:
        return self._values

    def __setitem__(self, key: str, value: Any) -> None:
        self._write({key: value})

    def __repr__(self) -> str:
        return f"RunConfig({self._values!r})"


class RunSummary(_ReadsAsDict):
    """A run's summary: values set with ``run.summary[key] = value``, appended as edit events.

    Reading a key that was never set gives the last logged value of that
    metric, as in W&B. ``RunInfo.summary`` holds the values that were set.
    """

    _what = "run summary"

    def __init__(self, run: Run, values: Mapping[str, Any]) -> None:
        object.__setattr__(self, "_run", run)
        object.__setattr__(self, "_values", dict(values))

    def _mapping(self) -> dict[str, Any]:
        # keys never set read the last logged value of that metric
        return {**self._run._last_metrics(), **self._values}

    def update(self, values: Mapping[str, Any] | None = None, **more: Any) -> None:
        """Set several values at once (one event)."""
        from tracker.write.edits import check_values, write_edit

        data = check_values({**dict(values or {}), **more}, "summary")
        if data:
            write_edit(self._run.path, {"summary": data}, fsync=self._run._host.config.fsync,
                       config=self._run._host.config)
            self._values.update(data)

    def __setitem__(self, key: str, value: Any) -> None:
        self.update({key: value})

    def __setattr__(self, name: str, value: Any) -> None:
        self.update({name: value})

    def __repr__(self) -> str:
        return f"RunSummary({self._mapping()!r})"


def _as_mapping(values: Any, what: str) -> dict[str, Any]:
    from tracker.core.values import config_container, given

    if values is None:
        return {}
    values = config_container(values)  # argparse Namespace, dataclass, OmegaConf DictConfig
    if isinstance(values, Mapping):
        return dict(values)
    if hasattr(values, "__dict__") and not isinstance(values, type):  # an object holding the settings
        return {k: v for k, v in vars(values).items() if not k.startswith("_")}
    raise TypeError(f"{what}: expected a dict, an argparse Namespace, a dataclass or an OmegaConf DictConfig, "
                    f"given {given(values)}")


class RunStateMethods:
    """``run.config`` and ``run.summary`` of :class:`tracker.Run`, built on first use, kept apart from api.py.

    A run :func:`tracker.start_run` created starts from the config it was given; one it attached to
    (resumed, or made by another process) from what the store holds.
    """

    id: str
    name: str | None
    project: str | None
    status: str
    store: Any
    _host: Any
    _att: Any
    _initial_config: dict[str, Any] | None
    _config: RunConfig | None
    _summary: RunSummary | None

    @property
    def config(self) -> RunConfig:
        """The run's config: ``run.config.lr``, ``run.config["lr"]``, ``run.config.update({...})``.

        Changes are appended as edit events; ``RunInfo.config`` shows them.
        """
        if self._config is None:
            values = self._initial_config if self._initial_config is not None else self._stored().config
            self._config = RunConfig(self, values)
        return self._config

    @property
    def summary(self) -> RunSummary:
        """The run's summary: ``run.summary["best_acc"] = 0.93`` (appended; last write wins).

        A key never set reads as the last logged value of that metric.
        """
        if self._summary is None:
            self._summary = RunSummary(self, {} if self._initial_config is not None else self._stored().summary)
        return self._summary

    def _stored(self) -> Any:
        from tracker.read.reader import RunView

        return RunView(self.store, self.id, host=self._host).info

    def _last_metrics(self) -> dict[str, Any]:
        return dict(self._att.writer.last)

    def _repr_html_(self) -> str:
        """The run in a notebook: name, status, config and last metrics (see :mod:`tracker.core.display`)."""
        from tracker.core.display import run_html

        return run_html(self.id, name=self.name, project=self.project, status=self.status,
                        config=dict(self.config), last_metrics=self._last_metrics())


class WandbRunMethods:
    """The W&B methods of :class:`tracker.Run` (``define_metric``, ``save``, ``watch``), kept apart from api.py."""

    _wb: WandbExtras | None
    _steps: list[int]
    path: Any

    @property
    def step(self) -> int:
        """W&B's ``run.step``: the step the next ``log`` without a step takes."""
        return self._steps[0]

    @property
    def url(self) -> None:
        """W&B's ``run.url``: ``None``, as for W&B's offline runs (the run is local; see ``run.path``)."""
        return None

    def get_url(self) -> None:
        """W&B's ``run.get_url()``: ``None`` (see :attr:`url`)."""
        return None

    @property
    def entity(self) -> None:
        """W&B's ``run.entity``: ``None`` (a local store has no entity)."""
        return None

    @property
    def dir(self) -> str:
        """W&B's ``run.dir``: a folder for the run's files, ``<run folder>/files`` (made on first use).

        What it holds when the run finishes is logged as artifacts, named by
        their path inside it (as W&B uploads its run folder), once per content.
        """
        path = os.path.join(self.path, "files")
        wb = self._wandb()
        with wb.lock:
            if not os.path.isdir(path):
                os.makedirs(path, exist_ok=True)
            entry = (os.path.join(path, "**"), path)
            if entry not in wb.saved:
                wb.saved.append(entry)
        return path

    def _wandb(self) -> WandbExtras:
        """The W&B extras of this run (pending step, defined metrics, watched models), made on first use."""
        with _extras_lock:
            if self._wb is None:
                from tracker.write.wandb.logging import WandbExtras

                self._wb = WandbExtras(self)
            return self._wb

    def define_metric(self, name: str, step_metric: str | None = None, *, summary: str | None = None,
                      goal: str | None = None, **options: Any) -> None:
        """W&B's ``define_metric``: ``summary="min"`` (``max``, ``mean``, ``last``, ``first``, ``best``,
        comma-separated) sets ``run.summary[name]`` to those aggregates at ``finish``; names may be globs."""
        self._wandb().define_metric(name, step_metric, summary=summary, goal=goal, **options)

    def save(self, glob_str: str | os.PathLike[str], base_path: str | os.PathLike[str] | None = None,
             policy: str = "live") -> list[str]:
        """W&B's ``save``: log the files matching ``glob_str`` as artifacts; returns their paths."""
        return self._wandb().save(glob_str, base_path, policy)

    def watch(self, models: Any, criterion: Any = None, log: str | None = "gradients", log_freq: int = 1000,
              idx: int | None = None, log_graph: bool = False) -> None:
        """W&B's ``watch``: gradient and/or parameter histograms of a torch model every ``log_freq`` steps.

        :param log: ``"gradients"``, ``"parameters"``, ``"all"`` or ``None``.
        """
        self._wandb().watch(models, log=log, log_freq=log_freq)

    def alert(self, title: str, text: str, level: Any = None, wait_duration: Any = None) -> bool:
        """W&B's ``run.alert``: record an ``alert`` in the run and deliver it to every configured channel.

        ``level`` is ``"INFO"`` (default), ``"WARN"`` or ``"ERROR"`` (or a
        ``tracker.AlertLevel``); the same ``title`` again within
        ``wait_duration`` seconds (a number or a ``timedelta``) of the last one
        sent is recorded as suppressed and not sent. Delivery (``[alerts.channels]``
        of tracker.toml) happens in a background thread, with retries; it never
        raises here. Returns whether the alert was sent.
        """
        from tracker.write.alert import record_alert

        return record_alert(self, title, text, level, wait_duration)

    def unwatch(self, models: Any = None) -> None:
        """Remove the hooks :meth:`watch` put on ``models`` (all watched models by default)."""
        if self._wb is not None:
            self._wb.unwatch(models)
