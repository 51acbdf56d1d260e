"""Built-in ``alert`` schema: what ``run.alert`` and the alert rules of ``tracker watch`` record in a run.

An ``alert`` record holds the title, the text and the level of an alert, and
whether it was ``suppressed`` (the same title again within ``wait_duration``:
recorded, not sent). ``condition`` names the rule that fired (empty for
``run.alert``), so that a watcher fires each rule once per run.
"""

from __future__ import annotations

import attrs

from tracker import Schema, Summarizer, Summary, Table, hookimpl

LEVELS = ("INFO", "WARN", "ERROR")


@attrs.frozen(kw_only=True)
class AlertRecord:
    """One alert of a run: title, text, level (INFO, WARN or ERROR), suppressed, and the condition that fired."""

    title: str
    text: str
    level: str = attrs.field(default="INFO", validator=attrs.validators.in_(LEVELS))
    suppressed: bool = False
    condition: str = ""


@hookimpl
def tracker_schemas() -> list[Schema]:
    return [Schema("alert", AlertRecord, description="an alert: run.alert() or a rule of tracker watch")]


@hookimpl
def tracker_summarizers() -> list[Summarizer]:
    return [Summarizer("alert.list", "alert", summarize_alerts, "every alert of the run, in log order")]


def summarize_alerts(table: Table) -> Summary:
    """Every alert in log order: step, level, title, whether it was sent, the condition that fired."""
    rows = [{"step": int(table["step"][i]), "level": table["level"][i], "title": table["title"][i],
             "sent": "suppressed" if table["suppressed"][i] else "sent",
             "condition": table["condition"][i] or "run.alert"} for i in range(len(table))]
    return Summary("Alerts", rows)
