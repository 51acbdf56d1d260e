"""``tracker tail``: a run's records in order, and with ``-f`` the ones still to come.

:class:`Follower` reads every segment of a run from where it last stopped,
so new writers (data-parallel ranks, resumes) are picked up as they appear,
and a line still being written is read only once it is complete.
"""

from __future__ import annotations

import math
import sys
import time
import warnings
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from tracker.cli import CliContext
from tracker.cli.options import format_option, handle_errors, require_schema, schema_option
from tracker.cli.render import cell, dumps_line
from tracker.cli.terminal import style
from tracker.core.format import RECORD, LineError, decode_nonfinite, iter_lines, merge_chunk, parse_line
from tracker.core.records import Problem, Record
from tracker.core.text import clock
from tracker.host.bus import TrackerWarning
from tracker.read.index import index_enabled
from tracker.read.reader import merge_log_order

#: Seconds between two looks at the run's files while following.
POLL_INTERVAL = 0.2


class Follower:
    """Reads a run's records incrementally, from every writer's segment.

    :param view: the run.
    :param schema: only records of this schema (``None``: all).
    :param host: the plugin host whose schemas restore NaN and infinities.
    """

    def __init__(self, view: Any, schema: str | None = None, host: Any = None) -> None:
        self.view = view
        self.schema = schema
        self.host = host
        self.offsets: dict[Path, int] = {}
        self.lines: dict[Path, int] = {}
        self.tops: dict[Path, float] = {}  # each segment's largest time so far (merge_log_order)
        self.seqs: dict[str, int] = {}  # over the team database: each writer's last sequence number read

    def _segment(self, path: Path, chunk: int) -> Iterator[Record]:
        for end, line in iter_lines(path, self.offsets.get(path, 0), chunk):
            lineno = self.lines.get(path, 0) + 1
            self.offsets[path], self.lines[path] = end, lineno
            try:
                ev = parse_line(line)
            except LineError as exc:
                warnings.warn(f"tracker: {Problem(str(path), lineno, exc.kind, str(exc))}", TrackerWarning,
                              stacklevel=2)
                continue
            if ev.get("kind") != RECORD or (self.schema is not None and ev.get("schema") != self.schema):
                continue
            data = ev.get("data")
            if not isinstance(data, dict):
                continue
            compiled = self.host.schemas.get(ev.get("schema")) if self.host is not None else None
            data = compiled.decode(data) if compiled is not None else decode_nonfinite(data)
            yield Record(ev.get("step"), ev.get("time"), ev.get("schema"), data, ev.get("w", ""), ev.get("seq", 0))

    def read(self) -> Iterator[Record]:
        """Every record appended since the last call, in log order across writers (streaming).

        The first call reads what the store's derived columns cover (every
        complete line, without parsing them again); later calls parse only
        the lines appended since, from each segment's offset.
        """
        after = getattr(self.view, "records_after", None)
        if after is not None:
            # The team database: each writer's records after the last sequence number printed.
            records, self.seqs = after(self.seqs, self.schema)
            return iter(records)
        if not self.offsets and index_enabled():
            records, ends = self.view.covered_records(self.schema)
            for path, (offset, lines, top) in ends.items():
                self.offsets[path], self.lines[path], self.tops[path] = offset, lines, top
            return records
        paths = self.view.segment_paths()
        gens = [self._segment(p, merge_chunk(len(paths))) for p in paths]
        tops = [self.tops.get(p, -math.inf) for p in paths]
        return self._remember(paths, tops, merge_log_order(gens, tops))

    def _remember(self, paths: list[Path], tops: list[float], records: Iterator[Record]) -> Iterator[Record]:
        yield from records
        self.tops.update(zip(paths, tops, strict=True))


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
        if not follow:
            return
        while True:
            status = view.refresh().status
            wrote = _write(out, follower.read(), fmt, schema is None)
            if status != "running":
                # The status was read before the records: whatever the writers wrote
                # up to their end has just been printed.
                click.echo(f"tracker: run {view.id} {status}", err=True)
                return
            if not wrote:
                time.sleep(POLL_INTERVAL)
    except KeyboardInterrupt:
        out.flush()
        sys.exit(0)


def _write(out: Any, records: Any, fmt: str, show_schema: bool) -> int:
    n = 0
    for rec in records:
        out.write(format_record(rec, fmt, show_schema) + "\n")
        n += 1
    if n:
        out.flush()
    return n
