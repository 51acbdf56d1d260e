"""``tracker logs``: what a run printed (its ``console`` records), and with ``-f`` what it still prints."""

from __future__ import annotations

import re
from typing import Any

import click

from tracker.cli import CliContext
from tracker.cli.options import fail, format_option, handle_errors
from tracker.cli.render import dumps, dumps_line
from tracker.cli.tail import follow_run
from tracker.cli.terminal import is_terminal, use_color
from tracker.read.console import CONSOLE, ConsoleLine, ConsoleLines, plain, select
from tracker.read.tail import Follower


@click.command("logs")
@click.argument("run")
@click.option("-f", "--follow", is_flag=True, help="Keep printing new lines until the run ends or Ctrl-C.")
@click.option("--stream", type=click.Choice(("stdout", "stderr")), help="Only the lines of this stream.")
@click.option("--grep", "pattern", metavar="RE", help="Only lines matching this regular expression.")
@click.option("--tail", "last", type=click.IntRange(min=0), metavar="N", help="Only the last N lines (of those "
              "already there, with -f).")
@format_option(("text", "json"), default="text")
@click.pass_obj
@handle_errors
def logs_cmd(obj: CliContext, run: str, follow: bool, stream: str | None, pattern: str | None, last: int | None,
             fmt: str) -> None:
    """Print what a run printed to stdout and stderr, in order; with -f, follow it while it runs.

    A line rewritten with a carriage return (a progress bar) shows its last
    state. Colours are kept on a terminal and left out otherwise (NO_COLOR
    too). --format json prints one JSON document (with -f, one JSON object
    per line) with each line's number, stream, text, time, step and writer.

    \b
    Examples:
      tracker logs 3f2a --tail 100
      tracker logs 3f2a --stream stderr --grep "NCCL|CUDA"
      tracker logs 3f2a -f
    """
    if pattern is not None:
        try:
            re.compile(pattern)
        except re.error as exc:
            fail(f"--grep: {pattern!r} is not a regular expression: {exc}", 2)
    view = obj.store.run(run)
    out = click.get_text_stream("stdout")
    color = use_color(out)
    reader = ConsoleLines()
    follower = Follower(view, CONSOLE, obj.host) if follow else None
    records = follower.read() if follower is not None else (view.records(CONSOLE) if CONSOLE in view.schemas()
                                                            else iter(()))
    lines = select(reader.lines(records), stream=stream, grep=pattern, tail=last)
    if fmt == "json" and not follow:
        click.echo(dumps({"run": view.id, "lines": [ln.to_json() for ln in lines]}))
        return
    printer = _Printer(out, fmt, color, is_terminal(out))
    for ln in lines:
        printer.line(ln, new=True)
    if follower is None:
        printer.end()
        return

    def poll() -> bool:
        changed = [(ln, new) for ln, new in reader.feed(follower.read()) if select([ln], stream=stream, grep=pattern)]
        for ln, new in changed:
            printer.line(ln, new)
        return bool(changed)

    follow_run(view, poll, printer.end)


class _Printer:
    """Lines to the output: a partial line (a progress bar) rewritten in place on a terminal, and printed
    only once it is finished elsewhere (or when the output ends)."""

    def __init__(self, out: Any, fmt: str, color: bool, terminal: bool) -> None:
        self.out = out
        self.fmt = fmt
        self.color = color
        self.terminal = terminal and fmt == "text"
        self.open: ConsoleLine | None = None   # a partial line shown in place on a terminal
        self.held: dict[int, ConsoleLine] = {}  # partial lines not printed yet (not a terminal)

    def text(self, ln: ConsoleLine) -> str:
        if self.fmt == "json":
            return dumps_line(ln.to_json())
        if not self.color:
            return plain(ln.text)
        if ln.stream == "stderr" and "\x1b" not in ln.text:
            return click.style(ln.text, fg="red")
        return ln.text

    def line(self, ln: ConsoleLine, new: bool) -> None:
        if self.terminal:
            if self.open is not None and self.open is not ln:
                self.out.write("\n")  # another line begins: the one shown in place stays as it was
                self.open = None
            self.out.write(("\r\x1b[K" if self.open is ln else "") + self.text(ln))
            if ln.partial:
                self.open = ln
            else:
                self.out.write("\n")
                self.open = None
            self.out.flush()
            return
        if ln.partial:
            self.held[ln.n] = ln
            return
        self.held.pop(ln.n, None)
        for n in sorted(k for k in self.held if k < ln.n):
            self.out.write(self.text(self.held.pop(n)) + "\n")
        self.out.write(self.text(ln) + "\n")
        self.out.flush()

    def end(self) -> None:
        if self.open is not None:
            self.out.write("\n")
            self.open = None
        for n in sorted(self.held):
            self.out.write(self.text(self.held[n]) + "\n")
        self.held.clear()
        self.out.flush()
