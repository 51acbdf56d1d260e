"""W&B's sweep configuration, checked: methods, metric, parameters and their distributions, early termination.

A sweep file that ``wandb sweep`` takes is taken here unchanged. Every
problem is one :class:`SweepConfigError` line naming the file and the key
(``sweep.yaml: parameters.lr.max: expected a number, given 'x'``), raised
before any trial starts. This module knows nothing of Optuna: it turns a
parameter into the number an Optuna distribution draws (its *internal*
value) and that number into the value the trial gets, so a sampler only ever
sees uniform, log-uniform, integer and categorical choices.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from statistics import NormalDist
from typing import Any

import attrs

from tracker.core.errors import ConfigError

METHODS = ("grid", "random", "bayes")
GOALS = ("minimize", "maximize")
DISTRIBUTIONS = ("constant", "categorical", "int_uniform", "uniform", "q_uniform", "log_uniform",
                 "log_uniform_values", "q_log_uniform", "q_log_uniform_values", "inv_log_uniform",
                 "inv_log_uniform_values", "normal", "q_normal", "log_normal", "q_log_normal")
TOP_KEYS = ("program", "command", "method", "metric", "parameters", "early_terminate", "run_cap", "name",
            "description", "project", "entity", "controller")
PARAM_KEYS = ("value", "values", "distribution", "min", "max", "q", "mu", "sigma", "probabilities", "parameters")
MACROS = ("${env}", "${interpreter}", "${program}", "${args}", "${args_no_hyphens}", "${args_json}",
          "${args_json_file}")
DEFAULT_COMMAND = ("${env}", "${interpreter}", "${program}", "${args}")
_EPS = 1e-12
_STD = NormalDist()


class SweepConfigError(ConfigError):
    """A sweep configuration W&B's format does not allow; the message names the file and the key."""


@attrs.frozen(kw_only=True)
class Param:
    """One swept parameter: where it goes in the config, and how its value is drawn.

    ``name`` is its dotted path (``optimizer.lr`` for a nested parameter),
    also its name in the Optuna study.
    """

    name: str
    path: tuple[str, ...]
    distribution: str
    value: Any = None
    values: tuple[Any, ...] = ()
    probabilities: tuple[float, ...] | None = None
    min: float | None = None
    max: float | None = None
    q: float | None = None
    mu: float = 0.0
    sigma: float = 1.0

    @property
    def sampled(self) -> bool:
        """Whether a sampler draws it (a constant is not drawn)."""
        return self.distribution != "constant"

    def space(self) -> tuple[str, Any, Any, bool]:
        """What the sampler draws: ``("float"|"int"|"categorical", low or choices, high, log)``."""
        d = self.distribution
        if d == "categorical":
            if self.probabilities is not None:
                return ("float", 0.0, 1.0, False)
            return ("categorical", self.choices(), None, False)
        if d == "int_uniform":
            return ("int", int(self.min), int(self.max), False)
        if d in ("uniform", "q_uniform"):
            return ("float", float(self.min), float(self.max), False)
        if d in ("log_uniform", "q_log_uniform"):
            return ("float", math.exp(self.min), math.exp(self.max), True)
        if d in ("log_uniform_values", "q_log_uniform_values", "inv_log_uniform_values"):
            return ("float", float(self.min), float(self.max), True)
        if d == "inv_log_uniform":
            return ("float", math.exp(-self.max), math.exp(-self.min), True)
        # normal and log-normal: a uniform quantile, turned into the value through the inverse CDF
        return ("float", 0.0, 1.0, False)

    def indexed(self) -> bool:
        """Whether the sampler sees the categorical values by index (values that are not plain or not distinct)."""
        plain = all(v is None or type(v) in (str, int, float, bool) for v in self.values)
        return not (plain and len({(type(v), v) for v in self.values}) == len(self.values))

    def choices(self) -> list[Any]:
        """The categorical choices the sampler sees: the values when they are plain and distinct, else indices."""
        return list(range(len(self.values))) if self.indexed() else list(self.values)

    def to_value(self, internal: Any) -> Any:
        """The trial's value for the sampler's draw ``internal``."""
        d = self.distribution
        if d == "constant":
            return self.value
        if d == "categorical":
            if self.probabilities is not None:
                acc = 0.0
                for v, p in zip(self.values, self.probabilities, strict=True):
                    acc += p
                    if internal < acc:
                        return v
                return self.values[-1]
            return self.values[int(internal)] if self.indexed() else internal
        if d == "int_uniform":
            return int(internal)
        if d in ("normal", "q_normal", "log_normal", "q_log_normal"):
            u = min(max(float(internal), _EPS), 1.0 - _EPS)
            x = self.mu + self.sigma * _STD.inv_cdf(u)
            if d in ("log_normal", "q_log_normal"):
                x = math.exp(x)
        else:
            x = float(internal)
        if d.startswith("q_"):
            q = self.q if self.q is not None else 1
            x = round(round(x / q) * q, 12)
            if type(q) is int:
                x = int(x)
        return x

    def grid_choices(self) -> list[Any]:
        """What a grid sampler chooses from: :meth:`choices` for values, else the grid values themselves."""
        return self.choices() if self.distribution == "categorical" else self.grid()

    def grid_value(self, internal: Any) -> Any:
        """The trial's value for a grid sampler's choice ``internal``."""
        if self.distribution == "categorical":
            return self.values[int(internal)] if self.indexed() else internal
        return internal

    def grid(self) -> list[Any]:
        """The values a grid sweep takes (the config check has refused the parameters that have none)."""
        d = self.distribution
        if d == "constant":
            return [self.value]
        if d == "categorical":
            return list(self.values)
        if d == "int_uniform":
            return list(range(int(self.min), int(self.max) + 1))
        q = self.q if self.q is not None else 1
        n = int(math.floor((self.max - self.min) / q + 1e-9))
        out = [round(self.min + i * q, 12) for i in range(n + 1)]
        return [int(v) for v in out] if type(q) is int and float(self.min).is_integer() else out


@attrs.frozen(kw_only=True)
class Hyperband:
    """``early_terminate: {type: hyperband, ...}`` as Optuna's HyperbandPruner takes it."""

    min_iter: int
    max_iter: int
    eta: int


@attrs.frozen(kw_only=True)
class SweepConfig:
    """A checked sweep configuration; ``raw`` is the mapping as given (stored with the sweep)."""

    raw: dict[str, Any]
    method: str
    params: tuple[Param, ...]
    metric: str | None = None
    goal: str = "minimize"
    target: float | None = None
    hyperband: Hyperband | None = None
    run_cap: int | None = None
    program: str | None = None
    command: tuple[str, ...] | None = None
    name: str | None = None
    project: str | None = None

    @property
    def sampled(self) -> list[Param]:
        """The parameters a sampler draws."""
        return [p for p in self.params if p.sampled]

    def grid_points(self) -> list[dict[str, Any]]:
        """Every point of a grid sweep, ``{param name: value}``, in a fixed order."""
        names = [p.name for p in self.params]
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(p.grid() for p in self.params))]

    def nest(self, flat: Mapping[str, Any]) -> dict[str, Any]:
        """The run's config for ``{param name: value}``: nested parameters as nested dicts."""
        out: dict[str, Any] = {}
        for p in self.params:
            at = out
            for part in p.path[:-1]:
                at = at.setdefault(part, {})
            at[p.path[-1]] = flat[p.name]
        return out


def _where(source: str | None, key: str) -> str:
    return f"{source}: {key}" if source else key


def _given(v: Any) -> str:
    return f"{type(v).__name__} {v!r}" if not isinstance(v, (dict, list)) else type(v).__name__


def _number(v: Any) -> bool:
    return type(v) in (int, float) and math.isfinite(v)


class _Checker:
    def __init__(self, source: str | None) -> None:
        self.source = source

    def fail(self, key: str, message: str) -> SweepConfigError:
        return SweepConfigError(f"{_where(self.source, key)}: {message}")

    def num(self, spec: Mapping[str, Any], key: str, where: str, *, required: bool = True,
            positive: bool = False, integer: bool = False) -> Any:
        if key not in spec:
            if required:
                raise self.fail(f"{where}.{key}", "missing")
            return None
        v = spec[key]
        if not _number(v) or (integer and type(v) is not int):
            raise self.fail(f"{where}.{key}", f"expected {'an int' if integer else 'a finite number'}, "
                                              f"given {_given(v)}")
        if positive and v <= 0:
            raise self.fail(f"{where}.{key}", f"expected a number > 0, given {v!r}")
        return v

    def param(self, name: str, spec: Any, path: tuple[str, ...], method: str, out: list[Param]) -> None:
        where = "parameters." + ".".join(path)
        if not isinstance(spec, Mapping):
            raise self.fail(where, f"expected a mapping (value, values, distribution, min, max...), given "
                                   f"{_given(spec)}")
        unknown = [k for k in spec if k not in PARAM_KEYS]
        if unknown:
            raise self.fail(f"{where}.{unknown[0]}", f"unknown key (expected one of {', '.join(PARAM_KEYS)})")
        if "parameters" in spec:
            others = [k for k in spec if k != "parameters"]
            if others:
                raise self.fail(f"{where}.{others[0]}", "a parameter with nested parameters takes no other key")
            nested = spec["parameters"]
            if not isinstance(nested, Mapping) or not nested:
                raise self.fail(f"{where}.parameters", "expected a mapping of nested parameters")
            for k, v in nested.items():
                self.param(f"{name}.{k}", v, (*path, str(k)), method, out)
            return
        dist = spec.get("distribution")
        if dist is None:
            if "value" in spec:
                dist = "constant"
            elif "values" in spec:
                dist = "categorical"
            elif "min" in spec and "max" in spec:
                lo, hi = spec["min"], spec["max"]
                dist = "int_uniform" if type(lo) is int and type(hi) is int else "uniform"
            else:
                raise self.fail(where, "expected value, values, distribution, or min and max")
        if dist not in DISTRIBUTIONS:
            raise self.fail(f"{where}.distribution",
                            f"unknown distribution {dist!r} (expected one of {', '.join(DISTRIBUTIONS)})")
        kw: dict[str, Any] = {"name": name, "path": path, "distribution": dist}
        if dist == "constant":
            if "value" not in spec:
                raise self.fail(f"{where}.value", "missing (distribution constant needs value)")
            kw["value"] = spec["value"]
        elif dist == "categorical":
            values = spec.get("values")
            if not isinstance(values, Sequence) or isinstance(values, str) or not values:
                raise self.fail(f"{where}.values", f"expected a non-empty list, given {_given(values)}")
            kw["values"] = tuple(values)
            probs = spec.get("probabilities")
            if probs is not None:
                if not isinstance(probs, Sequence) or len(probs) != len(values) \
                        or not all(_number(p) and p >= 0 for p in probs):
                    raise self.fail(f"{where}.probabilities",
                                    f"expected {len(values)} numbers >= 0, one per value, given {probs!r}")
                if abs(sum(probs) - 1.0) > 1e-6:
                    raise self.fail(f"{where}.probabilities", f"expected numbers that sum to 1, given {probs!r}")
                kw["probabilities"] = tuple(float(p) for p in probs)
        elif dist in ("normal", "q_normal", "log_normal", "q_log_normal"):
            mu = self.num(spec, "mu", where, required=False)
            sigma = self.num(spec, "sigma", where, required=False, positive=True)
            kw["mu"] = 0.0 if mu is None else float(mu)
            kw["sigma"] = 1.0 if sigma is None else float(sigma)
        else:
            integer = dist == "int_uniform"
            lo = self.num(spec, "min", where, integer=integer)
            hi = self.num(spec, "max", where, integer=integer)
            if lo > hi:
                raise self.fail(f"{where}.min", f"min {lo!r} is greater than max {hi!r}")
            if dist in ("log_uniform_values", "q_log_uniform_values", "inv_log_uniform_values") and lo <= 0:
                raise self.fail(f"{where}.min", f"distribution {dist} needs min > 0, given {lo!r}")
            kw["min"], kw["max"] = lo, hi
        if dist.startswith("q_"):
            kw["q"] = self.num(spec, "q", where, required=False, positive=True)
        if method == "grid" and dist not in ("constant", "categorical", "int_uniform", "q_uniform"):
            raise self.fail(where, f"method grid needs value, values, int_uniform or q_uniform, "
                                   f"given distribution {dist}")
        out.append(Param(**kw))


def check_sweep_config(raw: Any, source: str | None = None) -> SweepConfig:
    """Check a sweep configuration (a mapping in W&B's format) and return it parsed.

    :param source: the file it came from, named in errors.
    :raises SweepConfigError: one line naming the key and what was wrong.
    """
    c = _Checker(source)
    if not isinstance(raw, Mapping):
        raise c.fail("(top level)", f"expected a mapping of sweep keys, given {_given(raw)}")
    for key in raw:
        if key not in TOP_KEYS:
            raise c.fail(str(key), f"unknown key (expected one of {', '.join(TOP_KEYS)})")
    method = raw.get("method")
    if method is None:
        raise c.fail("method", f"missing (expected one of {', '.join(METHODS)})")
    if method not in METHODS:
        raise c.fail("method", f"unknown method {method!r} (expected one of {', '.join(METHODS)})")
    metric = goal = target = None
    if "metric" in raw:
        m = raw["metric"]
        if isinstance(m, str):
            m = {"name": m}
        if not isinstance(m, Mapping):
            raise c.fail("metric", f"expected a mapping with name and goal, given {_given(m)}")
        for k in m:
            if k not in ("name", "goal", "target", "impute", "imputewhileRunning"):
                raise c.fail(f"metric.{k}", "unknown key (expected name, goal or target)")
        metric = m.get("name")
        if not isinstance(metric, str) or not metric.strip():
            raise c.fail("metric.name", f"expected the name of a logged metric, given {_given(metric)}")
        goal = m.get("goal", "minimize")
        if goal not in GOALS:
            raise c.fail("metric.goal", f"expected minimize or maximize, given {goal!r}")
        target = c.num(m, "target", "metric", required=False)
    hyperband = None
    if "early_terminate" in raw:
        hyperband = _hyperband(c, raw["early_terminate"])
    if metric is None and (method == "bayes" or hyperband is not None):
        why = "method bayes" if method == "bayes" else "early_terminate"
        raise c.fail("metric", f"missing ({why} needs metric: {{name: ..., goal: minimize|maximize}})")
    params_raw = raw.get("parameters")
    if not isinstance(params_raw, Mapping) or not params_raw:
        raise c.fail("parameters", f"expected a mapping of parameters, given {_given(params_raw)}"
                     if params_raw is not None else "missing")
    params: list[Param] = []
    for k, v in params_raw.items():
        c.param(str(k), v, (str(k),), method, params)
    run_cap = c.num(raw, "run_cap", "", required=False, positive=True, integer=True) \
        if "run_cap" in raw else None
    program = raw.get("program")
    if program is not None and (not isinstance(program, str) or not program.strip()):
        raise c.fail("program", f"expected a path to the training script, given {_given(program)}")
    command = raw.get("command")
    if command is not None:
        if isinstance(command, str):
            command = shlex.split(command)
        if not isinstance(command, Sequence) or not command or not all(isinstance(x, str) for x in command):
            raise c.fail("command", f"expected a list of strings, given {_given(command)}")
        for i, item in enumerate(command):
            rest = item
            for macro in MACROS:
                rest = rest.replace(macro, "")
            if "${" in rest:
                bad = rest[rest.index("${"):].split("}")[0] + "}"
                raise c.fail(f"command[{i}]", f"unknown macro {bad} (expected one of {', '.join(MACROS)})")
        if any("${program}" in x for x in command) and program is None:
            raise c.fail("program", "missing (command uses ${program})")
        command = tuple(command)
    for key in ("name", "project"):
        if key in raw and raw[key] is not None and not isinstance(raw[key], str):
            raise c.fail(key, f"expected a string, given {_given(raw[key])}")
    if method == "grid":
        size = 1
        for p in params:
            size *= len(p.grid())
        if size == 0:
            raise c.fail("parameters", "the grid is empty")
    return SweepConfig(raw=_plain(dict(raw)), method=method, params=tuple(params), metric=metric,
                       goal=goal or "minimize", target=target, hyperband=hyperband, run_cap=run_cap,
                       program=program, command=command, name=raw.get("name"), project=raw.get("project"))


def _hyperband(c: _Checker, et: Any) -> Hyperband:
    if not isinstance(et, Mapping):
        raise c.fail("early_terminate", f"expected a mapping with type: hyperband, given {_given(et)}")
    for k in et:
        if k not in ("type", "min_iter", "max_iter", "s", "eta", "strict"):
            raise c.fail(f"early_terminate.{k}", "unknown key (expected type, min_iter, max_iter, s, eta, strict)")
    if et.get("type") != "hyperband":
        raise c.fail("early_terminate.type", f"expected hyperband, given {et.get('type')!r}")
    eta = c.num(et, "eta", "early_terminate", required=False, positive=True)
    eta = 3 if eta is None else eta
    if eta < 2:
        raise c.fail("early_terminate.eta", f"expected a number >= 2, given {eta!r}")
    lo = c.num(et, "min_iter", "early_terminate", required=False, positive=True, integer=True)
    hi = c.num(et, "max_iter", "early_terminate", required=False, positive=True, integer=True)
    s = c.num(et, "s", "early_terminate", required=False, positive=True, integer=True)
    if lo is None and hi is None:
        raise c.fail("early_terminate", "missing min_iter or max_iter")
    brackets = s if s is not None else 3
    if lo is None:
        lo = max(1, int(round(hi / eta ** brackets)))
    if hi is None:
        hi = int(round(lo * eta ** brackets))
    if lo > hi:
        raise c.fail("early_terminate.min_iter", f"min_iter {lo} is greater than max_iter {hi}")
    return Hyperband(min_iter=int(lo), max_iter=int(hi), eta=int(round(eta)))


def _plain(v: Any) -> Any:
    """The configuration as plain JSON values (YAML's own types, tuples, set as lists)."""
    if isinstance(v, Mapping):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def load_sweep_file(path: str | os.PathLike[str]) -> SweepConfig:
    """Read and check a sweep file: YAML (``.yaml``, ``.yml``, as W&B writes them) or JSON.

    :raises SweepConfigError: a file that cannot be read or parsed, or a bad key (one line).
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise SweepConfigError(f"{p}: cannot read the sweep file: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise SweepConfigError(f"{p}: not a UTF-8 text file") from None
    if p.suffix.lower() == ".json":
        try:
            raw = json.loads(text)
        except ValueError as exc:
            raise SweepConfigError(f"{p}: not valid JSON: {exc}") from None
    else:
        try:
            import yaml
        except ImportError:
            raise SweepConfigError(f"{p}: reading YAML needs PyYAML: pip install \"tracker-core[sweeps]\"") \
                from None
        try:
            raw = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = f"line {mark.line + 1}: " if mark is not None else ""
            raise SweepConfigError(f"{p}: {line}not valid YAML: {getattr(exc, 'problem', None) or exc}") \
                from None
    return check_sweep_config(raw, str(p))


# --- the trial's command line -------------------------------------------------------------------

def arg_text(value: Any) -> str:
    """A parameter's value on the command line, as W&B's agent writes it."""
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value)
    return str(value)


def build_command(config: SweepConfig, values: Mapping[str, Any], *, args_json_file: str | None = None,
                  interpreter: str | None = None) -> list[str]:
    """The trial's command: ``command`` (default ``${env} ${interpreter} ${program} ${args}``) with its macros.

    ``${args}`` gives ``--key=value`` per top-level parameter (a nested one as
    JSON), ``${args_no_hyphens}`` ``key=value``, ``${args_json}`` one JSON
    argument, ``${args_json_file}`` the path of a file holding that JSON.
    """
    program = config.program or ""
    interp = interpreter or sys.executable
    args = [f"--{k}={arg_text(v)}" for k, v in values.items()]
    # ``${env}`` is ``/usr/bin/env`` as in W&B, except in the default command, where it would only add an exec.
    use_env = config.command is not None and os.name == "posix" and os.path.exists("/usr/bin/env")
    expand = {
        "${env}": ["/usr/bin/env"] if use_env else [],
        "${interpreter}": [interp] if program.endswith(".py") or config.command is not None else [],
        "${program}": [program],
        "${args}": args,
        "${args_no_hyphens}": [a[2:] for a in args],
        "${args_json}": [json.dumps(dict(values))],
        "${args_json_file}": [args_json_file or ""],
    }
    out: list[str] = []
    for item in config.command or DEFAULT_COMMAND:
        if item in expand:
            out.extend(expand[item])
            continue
        for macro, parts in expand.items():
            if macro in item:
                item = item.replace(macro, " ".join(parts))
        out.append(item)
    return out
