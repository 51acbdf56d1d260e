"""``tracker tail``: a run's records in order, and with ``-f`` the ones still to come.

:class:`tracker.read.tail.Follower` reads every segment of a run from where it last
stopped, so new writers (data-parallel ranks, resumes) are picked up as they appear,
and a line still being written is read only once it is complete.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Callable
from typing import Any

import click

from tracker.cli import CliContext
from tracker.cli.options import format_option, handle_errors, require_schema, schema_option
from tracker.cli.render import cell, dumps_line
from tracker.cli.terminal import style
from tracker.core.records import Record
from tracker.core.text import clock
from tracker.read.tail import POLL_INTERVAL, Follower  # noqa: F401 - Follower lived here until 0.4


def format_record(rec: Record, fmt: str, show_schema: bool) -> str:
    """One record as a line of text (``step  time  schema  k=v ...``) or of JSON."""
    if fmt == "jsonl":
        return dumps_line({"step": rec.step, "time": rec.time, "schema": rec.schema, "writer": rec.writer,
                           "seq": rec.seq, "data": rec.data})
    fields = " ".join(f"{k}={cell(v)}" for k, v in rec.data.items())
    parts = [str(rec.step).rjust(6), style(clock(rec.time), dim=True)]
    if show_schema:
        parts.append(style(rec.schema, fg="cyan"))
    parts.append(fields)
    return "  ".join(parts)


@click.command("tail")
@click.argument("run")
@click.option("-f", "--follow", is_flag=True, help="Keep printing new records until the run ends or Ctrl-C.")
@schema_option()
@click.option("-n", "--lines", "last", type=click.IntRange(min=0), metavar="N",
              help="Start with only the last N records already there.")
@format_option(("text", "jsonl"), default="text")
@click.pass_obj
@handle_errors
def tail_cmd(obj: CliContext, run: str, follow: bool, schema: str | None, last: int | None, fmt: str) -> None:
    """Print a run's records in log order; with -f, follow new ones from every writer.

    Following stops when the run finishes (or fails, or its writers crash),
    or on Ctrl-C, which exits with status 0. --format jsonl prints one
    strict JSON object per record.

    \b
    Examples:
      tracker tail 3f2a -n 20
      tracker tail 3f2a -f --schema metrics
    """
    view = obj.store.run(run)
    host = obj.host
    if schema is not None and schema not in host.schemas and schema not in view.schemas():
        require_schema(host, schema)
    follower = Follower(view, schema, host)
    out = click.get_text_stream("stdout")
    try:
        existing: Any = follower.read()
        if last is not None:
            existing = deque(existing, maxlen=last)
        _write(out, existing, fmt, schema is None)
    except KeyboardInterrupt:
        out.flush()
        sys.exit(0)
    if follow:
        follow_run(view, lambda: _write(out, follower.read(), fmt, schema is None), out.flush)


def follow_run(view: Any, poll: Callable[[], Any], end: Callable[[], None]) -> None:
    """Print what a running run adds until it ends, or until Ctrl-C (exit status 0): ``tail -f``, ``logs -f``.

    Each round reads the run's status, then ``poll()`` prints what is new and
    returns whether it printed anything (if not, the next round waits
    :data:`POLL_INTERVAL`). The status was read before the records, so once it
    is not ``running`` whatever the writers wrote up to their end has been
    printed: ``end()``, and a line on stderr naming the status.
    """
    try:
        while True:
            status = view.refresh().status
            printed = poll()
            if status != "running":
                end()
                click.echo(f"tracker: run {view.id} {status}", err=True)
                return
            if not printed:
                time.sleep(POLL_INTERVAL)
    except KeyboardInterrupt:
        end()
        sys.exit(0)


def _write(out: Any, records: Any, fmt: str, show_schema: bool) -> int:
    n = 0
    for rec in records:
        out.write(format_record(rec, fmt, show_schema) + "\n")
        n += 1
    if n:
        out.flush()
    return n
