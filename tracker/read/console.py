"""A run's console read back: ``console`` records as numbered lines, a partial line replaced by its later state.

The console recorder (``tracker.capture.console``) writes the lines of one
stream it took at a time as one record, their texts joined by ``\n`` (stores
written before 0.6 hold one line per record: a line never holds a ``\n``, so
both read the same), and the state of a line still unfinished after 0.5 s as
the last line of a ``partial`` record; the next record of the same writer and
stream begins with that line's later state (or its end). :class:`ConsoleLines`
turns records into lines in that sense: each line of a record takes a line
number, except that the first line of the record following a partial one on
the same writer and stream takes the partial line's number (replacing its
text). Fed
incrementally (``tracker logs -f``, the dashboard's live Logs panel) it says
which lines are new and which were rewritten.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

import attrs

from tracker.core.records import Record

CONSOLE = "console"
STREAMS = ("stdout", "stderr")


@attrs.define(slots=True)
class ConsoleLine:
    """One line of a run's console.

    :ivar n: its line number (1-based, in the order lines began).
    :ivar stream: ``stdout`` or ``stderr``.
    :ivar text: the line without its newline (ANSI escapes kept).
    :ivar time: when it was recorded (seconds since the epoch).
    :ivar step: the run's latest step then.
    :ivar writer: the process that wrote it (a rank, a resume).
    :ivar partial: whether it was still unfinished when last recorded.
    """

    n: int
    stream: str
    text: str
    time: float
    step: int
    writer: str
    partial: bool = False

    def to_json(self) -> dict[str, Any]:
        """The line as plain data (``tracker logs --format json``, the dashboard)."""
        return {"n": self.n, "stream": self.stream, "text": self.text, "time": self.time, "step": self.step,
                "writer": self.writer, "partial": self.partial}


class ConsoleLines:
    """Lines from ``console`` records, fed in log order (all at once or as they come)."""

    def __init__(self) -> None:
        self.count = 0
        #: (writer, stream) -> the line whose partial state the next record of that writer and stream replaces.
        self.pending: dict[tuple[str, str], ConsoleLine] = {}

    def feed(self, records: Iterable[Record]) -> Iterator[tuple[ConsoleLine, bool]]:
        """``(line, new)`` per line of each record: ``new`` is false when the line rewrote one given before."""
        pending = self.pending
        for rec in records:
            if rec.schema != CONSOLE:
                continue
            d = rec.data
            stream = d.get("stream")
            if stream not in STREAMS:
                continue
            text = d.get("text")
            if not isinstance(text, str):
                continue
            partial = d.get("partial") is True
            key = (rec.writer, stream)
            texts = text.split("\n") if "\n" in text else (text,)
            last = len(texts) - 1
            for i, t in enumerate(texts):
                part = partial and i == last  # only a record's last line can be unfinished
                line = pending.pop(key, None) if i == 0 else None
                new = line is None
                if line is None:
                    self.count += 1
                    line = ConsoleLine(self.count, stream, t, rec.time, rec.step, rec.writer, part)
                else:
                    line.text, line.time, line.step, line.partial = t, rec.time, rec.step, part
                if part:
                    pending[key] = line
                yield line, new

    def lines(self, records: Iterable[Record]) -> list[ConsoleLine]:
        """Every line of ``records``, each in its last state, in line-number order."""
        out: list[ConsoleLine] = []
        for line, new in self.feed(records):
            if new:
                out.append(line)
        return out


def console_lines(view: Any, *, stream: str | None = None, grep: str | None = None,
                  tail: int | None = None) -> list[ConsoleLine]:
    """A run's console: every line in its last state, optionally one stream's, matching, or the last ``tail``.

    :param view: a run of either store (the reading protocol's ``RunReader``).
    :param grep: a regular expression searched in each line (ANSI escapes left out of the search).
    :raises re.error: ``grep`` is not a regular expression.
    """
    if CONSOLE not in view.schemas():
        return []
    lines = ConsoleLines().lines(view.records(CONSOLE))
    return select(lines, stream=stream, grep=grep, tail=tail)


_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def plain(text: str) -> str:
    """``text`` without its ANSI escape sequences (colours, cursor moves, hyperlinks)."""
    return _ANSI.sub("", text) if "\x1b" in text else text


def select(lines: list[ConsoleLine], *, stream: str | None = None, grep: str | None = None,
           tail: int | None = None) -> list[ConsoleLine]:
    """The lines of one stream, those matching ``grep``, then the last ``tail`` of them."""
    if stream is not None:
        lines = [ln for ln in lines if ln.stream == stream]
    if grep:
        rx = re.compile(grep)
        lines = [ln for ln in lines if rx.search(plain(ln.text))]
    if tail is not None:
        lines = lines[-tail:] if tail else []
    return lines


__all__ = ["CONSOLE", "ConsoleLine", "ConsoleLines", "console_lines", "plain", "select"]
