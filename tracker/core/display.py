"""How a run shows itself in a notebook: ``Run._repr_html_`` and ``RunView._repr_html_``.

Plain HTML from the standard library only (no dashboard import), so the read
core may use it. Every user string (name, project, config keys and values,
metric names) is escaped.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from typing import Any

#: At most this many config keys and last metrics are listed.
MAX_ROWS = 20
_STATUS_COLORS = {"running": "#2563eb", "finished": "#15803d", "failed": "#c2410c", "crashed": "#b91c1c",
                  "stopped": "#6b7280"}


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return f"{v:.4g}"
    return str(v)


def _flat(d: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for k, v in d.items():
        if isinstance(v, Mapping) and v:
            out.extend(_flat(v, f"{prefix}{k}."))
        else:
            out.append((f"{prefix}{k}", v))
    return out


def _table(title: str, rows: list[tuple[str, Any]]) -> str:
    if not rows:
        return ""
    shown = rows[:MAX_ROWS]
    more = f"<tr><td colspan='2' style='color:#6b7280'>… {len(rows) - MAX_ROWS} more</td></tr>" \
        if len(rows) > MAX_ROWS else ""
    body = "".join(f"<tr><th style='text-align:left;font-weight:500;color:#6b7280;padding-right:12px'>"
                   f"{html.escape(str(k))}</th><td style='text-align:left'>{html.escape(_value(v))}</td></tr>"
                   for k, v in shown)
    return (f"<div style='margin-top:6px'><b>{html.escape(title)}</b>"
            f"<table style='border-collapse:collapse;margin-top:2px'>{body}{more}</table></div>")


def run_html(run_id: str, *, name: str | None = None, project: str | None = None, status: str = "",
             config: Mapping[str, Any] | None = None, last_metrics: Mapping[str, Any] | None = None) -> str:
    """An HTML card of a run: name, id, project, status, config and last metrics (all escaped)."""
    color = _STATUS_COLORS.get(status, "#6b7280")
    head = (f"<b>{html.escape(name or run_id)}</b> <code>{html.escape(run_id)}</code>"
            + (f" · {html.escape(project)}" if project else "")
            + (f" · <span style='color:{color};font-weight:600'>{html.escape(status)}</span>" if status else ""))
    return (f"<div class='tracker-run' style='font-family:system-ui,sans-serif;font-size:13px'>{head}"
            + _table("config", _flat(config or {}))
            + _table("last metrics", sorted((last_metrics or {}).items()))
            + "</div>")


def info_html(info: Any) -> str:
    """:func:`run_html` of a :class:`tracker.RunInfo`."""
    return run_html(info.id, name=info.name, project=info.project, status=info.status,
                    config=info.config or {}, last_metrics=info.last_metrics or {})
