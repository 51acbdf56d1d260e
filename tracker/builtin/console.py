"""Built-in ``console`` schema: what a run's process printed, lines of one stream per record, and its summary.

The records are written by the console recorder (``tracker.capture.console``)
at the run's latest step, never advancing the automatic step. ``text`` is one
or more lines without their newlines, joined by ``\\n`` (ANSI escapes kept),
at most 64 KiB (stores written before 0.6 hold one line per record);
``partial`` marks the record's last line as the state of a line that was
still unfinished 0.5 s after it began (a progress bar rewritten with ``\\r``,
a prompt): the next record of the same stream and writer begins with that
line's later state, so readers show the last one.
"""

from __future__ import annotations

import attrs

from tracker import Schema, Summarizer, Summary, Table, hookimpl

STREAMS = ("stdout", "stderr")
#: The most text one record holds, in UTF-8 bytes; a longer line is split.
MAX_TEXT_BYTES = 64 * 1024


def _short_enough(_inst: object, _attribute: attrs.Attribute, text: str) -> None:
    if len(text) > MAX_TEXT_BYTES // 4 and len(text.encode("utf-8", "surrogatepass")) > MAX_TEXT_BYTES:
        raise ValueError(f"expected at most {MAX_TEXT_BYTES} bytes of UTF-8 (a longer line is split)")


@attrs.frozen(kw_only=True)
class ConsoleLine:
    """Lines a run's process wrote to stdout or stderr (without their newlines, joined by ``\\n``)."""

    stream: str = attrs.field(validator=attrs.validators.in_(STREAMS))
    text: str = attrs.field(validator=_short_enough)
    partial: bool = False


@hookimpl
def tracker_schemas() -> list[Schema]:
    return [Schema("console", ConsoleLine, description="lines the run's process wrote to stdout or stderr")]


@hookimpl
def tracker_summarizers() -> list[Summarizer]:
    return [Summarizer("console.lines", "console", summarize_console,
                       "per stream: lines and characters; the last stderr line")]


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def summarize_console(table: Table) -> Summary:
    """Per stream (and writer when several): lines and characters kept, the last line written."""
    rows = []
    streams = table["stream"]
    texts = table["text"]
    partial = table["partial"]
    for stream in STREAMS:
        idx = [i for i, s in enumerate(streams) if s == stream]
        if not idx:
            continue
        count = characters = 0
        last = ""
        for n, i in enumerate(idx):
            lines = texts[i].split("\n")
            if partial[i] and n < len(idx) - 1:
                # A partial record's last line is an earlier state of the next record's first line.
                lines.pop()
            count += len(lines)
            characters += sum(map(len, lines))
            if lines:
                last = lines[-1]
        rows.append({"stream": stream, "lines": count, "characters": characters, "last": _short(last)})
    return Summary("Console", rows)
