"""``WANDB_MODE=disabled`` (or ``init(mode="disabled")``): a run that takes every call and writes nothing.

As in W&B, the script runs as usual: ``run.config`` and ``run.summary`` keep
their values in memory, ``log`` checks nothing and stores nothing, and no
store folder is created.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from typing import Any

from tracker.write.runstate import _as_mapping, _ReadsAsDict


class _Values(_ReadsAsDict):
    """``config`` / ``summary`` of a disabled run: a dict with attribute access, kept in memory."""

    _what = "disabled run's values"

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        object.__setattr__(self, "_values", dict(values or {}))

    def _mapping(self) -> dict[str, Any]:
        return self._values

    def __setattr__(self, name: str, value: Any) -> None:
        self._values[name] = value

    def __setitem__(self, key: str, value: Any) -> None:
        self._values[key] = value

    def update(self, values: Any = None, *args: Any, **more: Any) -> None:
        """Set several keys."""
        self._values.update({**_as_mapping(values, "update"), **more})

    def setdefaults(self, values: Mapping[str, Any]) -> None:
        """Set the keys the config does not have yet."""
        for k, v in dict(values).items():
            self._values.setdefault(k, v)


class DisabledRun:
    """A run of ``WANDB_MODE=disabled``: the W&B run methods, doing nothing."""

    disabled = True

    def __init__(self, project: str | None, name: str | None, config: Mapping[str, Any]) -> None:
        self.id = secrets.token_hex(4)
        self.name = name
        self.project = project
        self.path = None
        self.status = "running"
        self.config = _Values(config)
        self.summary = _Values()
        self._step = 0
        self._dir: str | None = None

    @property
    def dir(self) -> str:
        """A temporary folder, as W&B's disabled runs give: files written there are not kept."""
        if self._dir is None:
            import tempfile

            self._dir = tempfile.mkdtemp(prefix="tracker-disabled-")
        return self._dir

    @property
    def step(self) -> int:
        """The step the next ``log`` would take."""
        return self._step

    def log(self, values: Any = None, step: int | None = None, commit: bool | None = None) -> None:
        """Nothing is stored; the step advances as it would."""
        if step is not None:
            self._step = max(self._step, int(step))
        if commit is not False:
            self._step += 1

    def finish(self, *args: Any, **kwargs: Any) -> None:
        """End the run: it stops being the active one."""
        from tracker.write import api

        self.status = "finished"
        with api._lock:
            if self in api._active:
                api._active.remove(self)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _nothing

    def __enter__(self) -> DisabledRun:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.finish()

    def __repr__(self) -> str:
        return f"<DisabledRun {self.id} (WANDB_MODE=disabled: nothing is stored)>"


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


def start_disabled(project: str | None, name: str | None, config: Mapping[str, Any]) -> DisabledRun:
    """A disabled run, made the active one (``tracker.log``, ``tracker.config`` reach it)."""
    from tracker.write import api

    run = DisabledRun(project, name, config)
    with api._lock:
        api._active.append(run)  # type: ignore[arg-type] - it answers every call a Run does
    return run
