"""What the framework integrations share: importing the framework, plain config values, scalar metrics.

Nothing here imports a framework at module level; tensors and numpy values
are recognised by their methods (``item``, ``numel``, ``tolist``).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import importlib
import numbers
import os
import secrets
from argparse import Namespace
from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePath
from types import ModuleType
from typing import Any

from tracker.write.api import Run, start_run

MAX_INT = 2**53
# Metric names the store reserves (the record's own fields).
RESERVED = frozenset({"step", "time"})
_INSTALL = {"lightning": "Lightning", "transformers": "Hugging Face Transformers", "keras": "Keras 3",
            "accelerate": "Hugging Face Accelerate",
            "tensorboard": "TensorBoard", "sweeps": "Optuna", "raytune": "Ray Tune",
            "mlflow": "PyYAML (to read MLflow's meta.yaml files)"}
# Config values deeper than this, or arrays larger than this, are kept as their repr.
_MAX_DEPTH = 32
_MAX_ARRAY = 10_000


def new_run_id() -> str:
    """A fresh run id in the store's own format (12 lowercase hex digits)."""
    return secrets.token_hex(6)


def require(module: str, extra: str, user: str) -> ModuleType:
    """Import ``module`` of a framework, or raise one clear ImportError saying what to install.

    :param module: the module to import, e.g. ``"lightning.pytorch"``.
    :param extra: the extra of ``tracker-core`` that installs it.
    :param user: the module that needs it, named in the message.
    :raises ImportError: the framework (or a module it needs) is missing.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").split(".")[0]
        framework = _INSTALL.get(extra, extra)
        if missing == module.split(".")[0]:
            raise ImportError(f'{user} needs {framework}, which is not installed: '
                              f'pip install "tracker-core[{extra}]"') from None
        hint = ""
        if extra == "keras" and missing in ("tensorflow", "jax"):
            hint = " (or set KERAS_BACKEND=torch before keras is imported)"
        raise ImportError(f"{user}: {framework} is installed but cannot be imported: module {missing!r} is "
                          f"missing; install it{hint}") from None


def plain(value: Any, _depth: int = 0) -> Any:
    """``value`` as JSON data for a run's config: dicts, Namespaces, dataclasses, tensors, paths, enums.

    Mappings keep their nesting (keys become strings); numpy and torch
    scalars become Python numbers, small arrays and tensors lists; ints beyond
    ±2**53 become strings so they stay exact; anything else its ``str``.
    """
    if _depth > _MAX_DEPTH:
        return repr(value)
    t = type(value)
    if value is None or t is bool or t is str or t is float:
        return value
    if t is int:
        return value if -MAX_INT <= value <= MAX_INT else str(value)
    d = _depth + 1
    if isinstance(value, enum.Enum):
        return plain(value.value, d)
    if isinstance(value, Namespace):
        return {str(k): plain(v, d) for k, v in vars(value).items()}
    if isinstance(value, Mapping):
        return {str(k): plain(v, d) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name), d) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [plain(v, d) for v in items]
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray)):
        return [plain(v, d) for v in value]  # OmegaConf's ListConfig and other sequences
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, bool):
        return bool(value)
    number = _number(value)
    if number is not None:
        return plain(number, d)
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and _size(value) <= _MAX_ARRAY:
        try:
            return plain(tolist(), d)
        except Exception:  # noqa: BLE001 - an odd object: keep its text below
            pass
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    if callable(value) and hasattr(value, "__qualname__"):
        return f"{getattr(value, '__module__', '')}.{value.__qualname__}".lstrip(".")
    return str(value)


def _size(value: Any) -> int:
    numel = getattr(value, "numel", None)
    if callable(numel):
        try:
            return int(numel())
        except Exception:  # noqa: BLE001 - not a tensor after all
            return _MAX_ARRAY + 1
    size = getattr(value, "size", None)
    return int(size) if isinstance(size, numbers.Integral) else _MAX_ARRAY + 1


def _number(value: Any) -> float | int | bool | None:
    """A number held by ``value`` (numpy scalar, one-element array or tensor, Decimal...), else ``None``."""
    t = type(value)
    if t is float or t is bool:
        return value
    if t is int:
        return value if -MAX_INT <= value <= MAX_INT else float(value)
    if isinstance(value, (str, bytes)):
        return None
    item = getattr(value, "item", None)
    if callable(item) and _size(value) == 1:
        try:
            inner = item()
        except Exception:  # noqa: BLE001 - e.g. a tensor on a device that cannot be read
            return None
        if type(inner) in (float, int, bool):
            return _number(inner)
        return None
    if isinstance(value, numbers.Integral):
        return _number(int(value))
    if isinstance(value, numbers.Real):
        return float(value)
    return None


def scalars(values: Mapping[str, Any], *, prefix: str = "") -> dict[str, float | int | bool]:
    """The numeric entries of ``values`` as Python numbers, for :meth:`tracker.Run.log`.

    Tensors and arrays of one element, numpy scalars, ints and floats are
    kept (NaN and infinities too); strings and larger arrays are left out. The
    store reserves ``step`` and ``time``: such metrics are logged as
    ``step_value`` and ``time_value``.
    """
    out: dict[str, float | int | bool] = {}
    for key, value in values.items():
        number = _number(value)
        if number is None:
            continue
        name = f"{prefix}{key}"
        if name in RESERVED:
            name = f"{name}_value"
        out[name] = number
    return out


class RunArgs:
    """The ``start_run`` arguments an integration was made with; starts or resumes its run.

    ``resume=None`` (the integrations' default) means: resume when a
    ``run_id`` is given (a restarted or resumed training attaches to its
    run), else start a new run.
    """

    def __init__(self, project: str | None, name: str | None, config: Mapping[str, Any] | None,
                 tags: list[str] | None, store: str | os.PathLike[str] | None, run_id: str | None,
                 resume: bool | None) -> None:
        self.project = project
        self.name = name
        self.config = dict(config or {})
        self.tags = list(tags) if tags is not None else None
        self.store = store
        self.run_id = run_id
        self.resume = resume if resume is not None else run_id is not None

    def start(self, config: Mapping[str, Any] | None = None, *, resume: bool = False) -> Run:
        """Start the run (or attach to it) with ``config`` under the user's own config.

        :param config: what the framework tells (its arguments, the model's
            config); the config given to the integration wins on a clash.
        :param resume: attach to the run even without an explicit ``resume``
            (the integration made this run earlier in the process).
        """
        merged = {**plain(dict(config or {})), **plain(self.config)}
        run = start_run(self.project, self.name, config=merged, tags=self.tags, store=self.store,
                        run_id=self.run_id, resume=resume or self.resume)
        self.run_id = run.id
        return run


def close_run(run: Run | None, exc: BaseException | None = None) -> None:
    """Finish ``run`` if it still runs: ``finished``, or ``failed`` with ``exc`` when one is given."""
    if run is not None and run.status == "running":
        if exc is None:
            run.finish("finished")
        else:
            run.finish("failed", exc)


def on_exception(fn: Callable[..., Any], handler: Callable[[BaseException], None]) -> Callable[..., Any]:
    """``fn`` wrapped so that an exception it raises is first given to ``handler``, then propagates.

    For frameworks without an exception hook: the run is marked failed before
    the user sees the exception.
    """
    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except BaseException as exc:
            handler(exc)
            raise

    return guarded


def check_flags(owner: str, **flags: Any) -> None:
    """Raise TypeError naming ``owner``'s option when one of ``flags`` is not a bool."""
    for option, value in flags.items():
        if type(value) is not bool:
            raise TypeError(f"{owner}: {option} expects a bool, given {type(value).__name__} {value!r}")
