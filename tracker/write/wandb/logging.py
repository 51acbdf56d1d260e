"""W&B's ``log`` rules and the run methods around them: ``commit``, media values, ``define_metric``,
``save``, ``watch`` and ``sync_tensorboard``.

A run gets a :class:`WandbExtras` the first time it needs one (``commit=``,
a media value, a nested dict, ``define_metric``...); from then on its
``log`` calls pass here. The rules are W&B's:

- ``log(d)`` writes ``d`` at the next step; ``log(d, commit=False)`` holds
  ``d`` for the pending step instead, and the next ``log`` without
  ``commit=False`` (or ``finish``) writes the merged values at that step.
- ``log(d, step=s)`` writes at ``s`` (with ``commit=False``: holds ``d`` for
  ``s``; a held step other than ``s`` is written first). A step below the
  largest is kept as logged, never dropped (W&B drops it with a warning).
- nested dicts are flattened with ``/``; ``Image``, ``Histogram`` and
  ``Table`` values (and lists of them) become records of their own at the
  step; a numpy array or tensor of more than one value becomes a histogram;
  a string becomes a ``text`` record at the step.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tracker.core.errors import SchemaError
from tracker.core.files import not_a_file
from tracker.core.format import METRICS
from tracker.core.values import RESERVED, check_metrics, given
from tracker.write.wandb.media import Histogram, Media, Text

_AGGREGATES = ("min", "max", "mean", "last", "first", "best", "none", "copy")
_WATCH_LOG = ("gradients", "parameters", "all", None)


def flatten(values: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts as one level, keys joined with ``/`` (``{"a": {"b": 1}}`` -> ``{"a/b": 1}``)."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if type(key) is not str:
            raise SchemaError(METRICS, [(repr(key), f"expected a str metric name, given {given(key)}")])
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, name + "/"))
        else:
            out[name] = value
    return out


def _array_size(value: Any) -> int:
    """The number of values of a numpy array or tensor with ``ndim >= 1``, else -1."""
    if getattr(value, "ndim", 0) in (0, None) or not hasattr(value, "shape"):
        return -1
    n = 1
    for d in value.shape:
        n *= int(d)
    return n


class WandbExtras:
    """One run's W&B state: the pending step, defined metrics, saved globs, watched models, TensorBoard sync."""

    def __init__(self, run: Any) -> None:
        self.run = run
        self.lock = threading.RLock()
        self.pending: dict[str, Any] = {}
        self.pending_step: int | None = None
        self.has_pending = False
        #: define_metric: (glob, aggregates, goal), in the order given (the last that matches wins)
        self.defined: list[tuple[str, tuple[str, ...], str | None]] = []
        #: define_metric's (name, step_metric) pairs already stored as metric_axis records
        self.axes: set[tuple[str, str]] = set()
        self.saved: list[tuple[str, str | None]] = []
        self.saved_stamps: dict[str, tuple[int, int]] = {}
        self.watches: list[Any] = []
        self.tensorboard: Any = None

    # --- log ------------------------------------------------------------------------------

    def log(self, values: Any, step: int | None, commit: bool | None) -> None:
        """``run.log`` with W&B's rules (see the module's docstring)."""
        if not isinstance(values, Mapping):
            raise SchemaError(METRICS, [("(record)", f"expected a mapping of name to value, given {given(values)}")])
        flat = flatten(values)
        numbers, media = self._split(flat)  # checked before anything is held or written
        with self.lock:
            if commit is False:
                if self.has_pending and step is not None and step != self.pending_step:
                    self.flush()
                if not self.has_pending:
                    self.pending_step, self.has_pending = step, True
                self.pending.update(numbers)
                self.pending.update(media)
                return
            if self.has_pending and (step is None or step == self.pending_step):
                numbers = {**{k: v for k, v in self.pending.items() if not _is_media(v)}, **numbers}
                media = {**{k: v for k, v in self.pending.items() if _is_media(v)}, **media}
                step = self.pending_step
                self._clear()
            elif self.has_pending:
                self.flush()
            self._write(numbers, media, step)

    def flush(self) -> None:
        """Write the pending step, if any."""
        with self.lock:
            if not self.has_pending:
                return
            pending, step = self.pending, self.pending_step
            self._clear()
            numbers = {k: v for k, v in pending.items() if not _is_media(v)}
            media = {k: v for k, v in pending.items() if _is_media(v)}
            self._write(numbers, media, step)

    def hold(self, name: str, value: Any) -> None:
        """Add ``value`` to the pending step (``watch`` puts its histograms here, as W&B does)."""
        with self.lock:
            if not self.has_pending:
                self.pending_step, self.has_pending = None, True
            self.pending[name] = value

    def _clear(self) -> None:
        self.pending, self.pending_step, self.has_pending = {}, None, False

    def _split(self, flat: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        numbers: dict[str, Any] = {}
        media: dict[str, Any] = {}
        for name, value in flat.items():
            if _is_media(value):
                media[name] = value
            elif type(value) in (list, tuple) and value and all(_is_media(v) for v in value):
                media[name] = list(value)
            elif isinstance(value, str):
                if not name or name in RESERVED:
                    raise SchemaError(METRICS, [(repr(name), f"expected a metric name other than '' and "
                                                             f"{sorted(RESERVED)} (reserved), given {name!r}")])
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError:
                    raise SchemaError(METRICS, [(name, "expected a number, or a str encodable as UTF-8 (no lone "
                                                       f"surrogates), given {given(value)}")]) from None
                media[name] = Text(value)  # a text record beside the metrics, at the same step
            elif _array_size(value) > 1:
                media[name] = Histogram(value)  # W&B logs arrays and tensors as histograms
            else:
                numbers[name] = value
        return (check_metrics(numbers) if numbers else {}), media

    def _write(self, numbers: dict[str, Any], media: dict[str, Any], step: int | None) -> None:
        run = self.run
        if media:
            records = []
            for name, value in media.items():
                for item in (value if type(value) is list else [value]):
                    records.append((item.schema, item.record(run, name)))
            at = step if step is not None else run._steps[0]
            time = _now()
            if numbers:
                run._write(METRICS, numbers, at, time)
            for schema, data in records:
                compiled = run._host.schemas.get(schema) or run._host.schema(schema)
                run._write(compiled.name, compiled.validate(data), at, time)
        else:
            run._write(METRICS, numbers, step, _now())

    # --- define_metric ----------------------------------------------------------------------

    def define_metric(self, name: str, step_metric: str | None = None, *, summary: str | None = None,
                      goal: str | None = None, **options: Any) -> None:
        """Remember which aggregates of the metrics matching ``name`` go to the summary at ``finish``."""
        if type(name) is not str or not name:
            raise TypeError(f"define_metric: name expects a non-empty str, given {given(name)}")
        if step_metric is not None and type(step_metric) is not str:
            raise TypeError(f"define_metric: step_metric expects a str, given {given(step_metric)}")
        unknown = sorted(set(options) - {"step_sync", "hidden", "overwrite"})
        if unknown:
            raise TypeError(f"define_metric() got an unexpected keyword argument {unknown[0]!r}")
        if goal not in (None, "minimize", "maximize"):
            raise ValueError(f"define_metric: goal expects 'minimize' or 'maximize', given {goal!r}")
        aggregates: tuple[str, ...] = ()
        if summary is not None:
            aggregates = tuple(a.strip() for a in str(summary).split(",") if a.strip())
            bad = [a for a in aggregates if a not in _AGGREGATES]
            if bad:
                raise ValueError(f"define_metric: summary expects a comma-separated list of {', '.join(_AGGREGATES)}, "
                                 f"given {summary!r}")
            if "best" in aggregates and goal is None:
                raise ValueError("define_metric: summary 'best' needs goal='minimize' or goal='maximize'")
        with self.lock:
            self.defined.append((name, aggregates, goal))
        if step_metric is not None:
            self._write_axis(name, step_metric)

    def _write_axis(self, name: str, step_metric: str) -> None:
        """Store ``step_metric`` as the x-axis of the metrics matching ``name`` (the dashboard draws them so)."""
        from tracker.capture import latest_step

        run = self.run
        if (name, step_metric) in self.axes:
            return
        run._log_side("metric_axis", {"name": name, "step_metric": step_metric}, latest_step(run), True)
        self.axes.add((name, step_metric))

    def _summaries(self) -> dict[str, Any]:
        """The define_metric aggregates of every metric of the run (all its segments), by metric name."""
        wanted = [(p, a, g) for p, a, g in self.defined if a]
        if not wanted:
            return {}
        import numpy as np

        from tracker.read.reader import RunView

        metrics = RunView(self.run.store, self.run.id, host=self.run._host).metrics()
        out: dict[str, Any] = {}
        for name, column in metrics.items():
            if name == "step":
                continue
            match = None
            for pattern, aggregates, goal in wanted:
                if fnmatch.fnmatchcase(name, pattern):
                    match = (aggregates, goal)
            if match is None or "none" in match[0]:
                continue
            values = np.asarray(column, dtype=np.float64)
            values = values[~np.isnan(values)]
            if not values.size:
                continue
            aggregates, goal = match
            entry: dict[str, Any] = {}
            for a in aggregates:
                if a == "min" or (a == "best" and goal == "minimize"):
                    entry[a] = _number(values.min())
                elif a == "max" or (a == "best" and goal == "maximize"):
                    entry[a] = _number(values.max())
                elif a == "mean":
                    entry[a] = _number(values.mean())
                elif a in ("last", "copy"):
                    entry["last"] = _number(values[-1])
                elif a == "first":
                    entry[a] = _number(values[0])
            out[name] = entry
        return out

    # --- save -------------------------------------------------------------------------------

    def save(self, glob_str: Any, base_path: Any = None, policy: str = "live") -> list[str]:
        """Log the files matching ``glob_str`` as artifacts now; files that match later are logged at ``finish``."""
        if policy not in ("live", "now", "end"):
            raise ValueError(f"save: policy expects 'live', 'now' or 'end', given {policy!r}")
        pattern = os.fspath(glob_str)
        base = None if base_path is None else os.fspath(base_path)
        if base is not None and not os.path.isabs(pattern):
            pattern = os.path.join(base, pattern)
        if policy != "now":
            self.saved.append((pattern, base))
        return self._save_matches(pattern, base, changed_only=False) if policy != "end" else []

    def _save_matches(self, pattern: str, base: str | None, changed_only: bool) -> list[str]:
        paths = sorted(glob.glob(pattern, recursive=True))
        done = []
        for path in paths:
            p = Path(path)
            what = not_a_file(p)
            if what == "a folder":
                continue  # a glob's folders: their files match patterns of their own
            if what is not None:
                import warnings

                from tracker.host.bus import TrackerWarning

                warnings.warn(f"tracker.save: {p} is {what}, not a file; not logged", TrackerWarning, stacklevel=4)
                continue
            st = p.stat()
            key = str(p.resolve())
            stamp = (st.st_size, st.st_mtime_ns)
            if changed_only and self.saved_stamps.get(key) == stamp:
                continue
            name = os.path.relpath(path, base).replace(os.sep, "/") if base is not None else p.name
            if name.startswith("../") or name == "..":
                name = p.name  # a file outside base_path: named by its file name, as without one
            self.run.log_artifact(p, name=name)
            self.saved_stamps[key] = stamp
            done.append(str(p))
        return done

    # --- watch ------------------------------------------------------------------------------

    def watch(self, models: Any, *, log: str | None = "gradients", log_freq: int = 1000) -> None:
        """Put hooks on torch models: their gradients and/or parameters as histograms every ``log_freq`` calls."""
        from tracker.write.wandb.watch import Watch

        if log not in _WATCH_LOG:
            raise ValueError(f"watch: log expects 'gradients', 'parameters', 'all' or None, given {log!r}")
        if type(log_freq) is not int or log_freq < 1:
            raise ValueError(f"watch: log_freq expects a positive int, given {log_freq!r}")
        items = list(models) if isinstance(models, (list, tuple)) else [models]
        for i, model in enumerate(items):
            prefix = "" if len(items) == 1 else f"graph_{len(self.watches) + i}/"
            self.watches.append(Watch(self, model, log, log_freq, prefix))

    def unwatch(self, models: Any = None) -> None:
        """Remove the hooks of ``models`` (every watched model when ``None``)."""
        targets = None if models is None else (list(models) if isinstance(models, (list, tuple)) else [models])
        keep = []
        for w in self.watches:
            if targets is None or any(w.model is m for m in targets):
                w.remove()
            else:
                keep.append(w)
        self.watches = keep

    # --- finish -----------------------------------------------------------------------------

    def close(self) -> None:
        """At ``finish``: hooks removed, TensorBoard unpatched, saved globs and the pending step written,
        define_metric summaries set."""
        failures: list[str] = []
        for step in (lambda: self.unwatch(None), self._stop_tensorboard, self._save_at_end, self.flush,
                     self._write_summaries):
            try:
                step()
            except Exception as exc:  # noqa: BLE001 - finish goes on; what failed is named below
                failures.append(f"{type(exc).__name__}: {exc}")
        if failures:
            import warnings

            from tracker.host.bus import TrackerWarning

            warnings.warn(f"tracker: run {self.run.id}: at finish: {'; '.join(failures)}", TrackerWarning,
                          stacklevel=3)

    def _stop_tensorboard(self) -> None:
        if self.tensorboard is not None:
            self.tensorboard.stop()
            self.tensorboard = None

    def _save_at_end(self) -> None:
        for pattern, base in self.saved:
            self._save_matches(pattern, base, changed_only=True)

    def _write_summaries(self) -> None:
        summaries = self._summaries()
        if summaries:
            self.run.summary.update(summaries)


def _is_media(value: Any) -> bool:
    return isinstance(value, Media) or (type(value) is list and bool(value) and all(isinstance(v, Media)
                                                                                     for v in value))


def _number(x: Any) -> float:
    return float(x)


def _now() -> float:
    import time

    return time.time()
