"""The ``when`` of an alert rule, parsed once: a metric condition, a run's end, or a silence.

``loss is nan``, ``loss > 10``, ``acc < 0.1`` (also ``>=``, ``<=``), ``run crashed``,
``run failed``, ``run finished``, ``no record for 10m`` (``s``, ``m``, ``h``).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import attrs

from tracker.core.errors import ConfigError

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?inf"
_METRIC_NAN = re.compile(r"^(?P<metric>\S+)\s+is\s+nan$", re.IGNORECASE)
_THRESHOLD = re.compile(rf"^(?P<metric>\S+?)\s*(?P<op>>=|<=|>|<)\s*(?P<value>{_NUMBER})$", re.IGNORECASE)
_RUN = re.compile(r"^run\s+(?P<status>crashed|failed|finished)$", re.IGNORECASE)
_STALL = re.compile(r"^no\s+records?\s+for\s+(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>[smh])$", re.IGNORECASE)
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}
EXPECTED = ('"METRIC is nan", "METRIC > NUMBER" (or <, >=, <=), "run crashed", "run failed", "run finished" '
            'or "no record for DURATION" (e.g. 30s, 10m, 2h)')

#: The level a rule's alert takes when the rule does not say.
DEFAULT_LEVELS = {"nan": "ERROR", "threshold": "WARN", "crashed": "ERROR", "failed": "ERROR",
                  "finished": "INFO", "stall": "WARN"}


@attrs.frozen(kw_only=True)
class Condition:
    """A parsed ``when``: ``kind`` is ``nan``, ``threshold``, ``crashed``, ``failed``, ``finished`` or ``stall``."""

    text: str
    kind: str
    metric: str | None = None
    op: str | None = None
    value: float | None = None
    seconds: float | None = None

    def holds(self, value: Any) -> bool:
        """Whether a metric value meets a metric condition (``nan`` or ``threshold``)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.kind == "nan":
            return math.isnan(value)
        if math.isnan(value):
            return False
        assert self.value is not None
        return {">": value > self.value, "<": value < self.value, ">=": value >= self.value,
                "<=": value <= self.value}[self.op or ">"]


def parse_condition(text: str) -> Condition:
    """Parse a ``when`` text.

    :raises ValueError: naming what was expected.
    """
    t = " ".join(str(text).split())
    if m := _METRIC_NAN.match(t):
        return Condition(text=t, kind="nan", metric=m["metric"])
    if m := _RUN.match(t):
        return Condition(text=t, kind=m["status"].lower())
    if m := _STALL.match(t):
        return Condition(text=t, kind="stall", seconds=float(m["n"]) * _UNITS[m["unit"].lower()])
    if m := _THRESHOLD.match(t):
        return Condition(text=t, kind="threshold", metric=m["metric"], op=m["op"], value=float(m["value"]))
    raise ValueError(f"expected {EXPECTED}")


def parse_duration(text: str) -> float:
    """``30s``, ``10m``, ``2h`` (or a bare number of seconds) as seconds.

    :raises ValueError: naming what was expected.
    """
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", str(text), re.IGNORECASE)
    if not m:
        raise ValueError(f"expected a duration such as 30s, 10m or 2h, given {text!r}")
    return float(m[1]) * _UNITS.get(m[2].lower() or "s", 1.0)


@attrs.frozen(kw_only=True)
class Rule:
    """One ``[[alerts.rules]]`` table: its condition, which runs it watches, where it sends, its level."""

    index: int
    condition: Condition
    project: str | None = None
    tags: tuple[str, ...] = ()
    channels: tuple[str, ...] | None = None
    level: str = "WARN"
    title: str = ""

    @property
    def key(self) -> str:
        """What the alert record's ``condition`` holds: the ``when`` text (fires once per run)."""
        return self.condition.text

    def watches(self, project: str | None, tags: list[str] | tuple[str, ...]) -> bool:
        """Whether a run of ``project`` with ``tags`` is one this rule watches."""
        return (self.project is None or self.project == project) and all(t in tags for t in self.tags)


def parse_rules(alerts: dict[str, Any], file: Path | None) -> list[Rule]:
    """The rules of a checked ``[alerts]`` table (see :func:`tracker.config.load_config`).

    :raises ConfigError: naming the file, the rule (its number and ``when``) and what was expected.
    """
    out = []
    for i, raw in enumerate(alerts.get("rules", []), 1):
        try:
            cond = parse_condition(raw["when"])
        except ValueError as exc:
            raise ConfigError(f"{file or 'tracker.toml'}: [[alerts.rules]] #{i} when = {raw['when']!r}: {exc}") \
                from None
        out.append(Rule(index=i, condition=cond, project=raw.get("project"), tags=tuple(raw.get("tags", ())),
                        channels=tuple(raw["channels"]) if "channels" in raw else None,
                        level=raw.get("level", DEFAULT_LEVELS[cond.kind]), title=raw.get("title", "")))
    return out
