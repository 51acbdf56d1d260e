"""``tracker export``: one schema's records of a run as CSV or JSON Lines, streamed."""

from __future__ import annotations

import contextlib
import csv
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import click

from ..bus import TrackerWarning
from ..format import METRICS, schema_mark
from . import CliContext
from .options import handle_errors, require_schema, schema_option
from .render import csv_value, dumps_line
from .terminal import PROGRESS_MIN_BYTES, is_terminal, progress

EXPORT_FORMATS = ("csv", "jsonl")
_CHUNK = 1 << 20


def _count_marked(paths: list[Path], mark: bytes) -> int:
    """How many lines of ``paths`` contain ``mark`` (a fast byte scan, for a progress bar)."""
    total = 0
    for path in paths:
        with open(path, "rb") as f:
            rest = b""
            while chunk := f.read(_CHUNK):
                data = rest + chunk
                cut = data.rfind(b"\n") + 1
                total += data.count(mark, 0, cut)
                rest = data[cut:]
    return total


def _field_names(view: Any, schema: str) -> tuple[list[str], int]:
    """The data fields of a free-form or unknown schema in order of first appearance, and the record count."""
    names: dict[str, None] = {}
    n = 0
    with warnings.catch_warnings():
        # The second pass reports damaged lines; the first one stays quiet.
        warnings.simplefilter("ignore", TrackerWarning)
        for rec in view.records(schema):
            n += 1
            for k in rec.data:
                if k not in names:
                    names[k] = None
    return list(names), n


@contextlib.contextmanager
def _output(path: Path | None) -> Iterator[IO[str]]:
    """stdout, or a file written beside ``path`` and moved into place only when complete."""
    if path is None:
        yield click.get_text_stream("stdout")
        return
    partial = path.with_name(path.name + ".partial")
    try:
        with open(partial, "w", encoding="utf-8", newline="") as f:
            yield f
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            partial.unlink()
        raise


@click.command("export")
@click.argument("run")
@schema_option("The schema to export (default: metrics).")
@click.option("--format", "fmt", type=click.Choice(EXPORT_FORMATS),
              help="csv or jsonl (default: from the suffix of -o, else csv).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True, path_type=Path),
              help="Write to this file instead of stdout.")
@click.pass_obj
@handle_errors
def export_cmd(obj: CliContext, run: str, schema: str | None, fmt: str | None, output: Path | None) -> None:
    """Export one schema's records of a run, one row per record: step, time, then the fields.

    Streams the run's segments (merged by time across writers), so memory
    stays flat whatever the run's size. CSV writes NaN and infinities as
    NaN, inf and -inf and lists as JSON; JSON Lines writes them as
    the store does ("NaN", "Infinity", "-Infinity").

    \b
    Examples:
      tracker export 3f2a --format csv -o metrics.csv
      tracker export 3f2a --schema fft.loss_point --format jsonl | jq .total_loss
    """
    if fmt is None:
        fmt = "jsonl" if output is not None and output.suffix.lower() in (".jsonl", ".ndjson", ".json") else "csv"
    view = obj.store.run(run)
    host = obj.host
    schema = schema or METRICS
    compiled = host.schemas.get(schema)
    if compiled is None and schema not in view.schemas():
        require_schema(host, schema)
    paths = view.segment_paths()
    size = sum(p.stat().st_size for p in paths)
    to_terminal = output is None and is_terminal()
    count: int | None = None
    if fmt == "csv" and (compiled is None or compiled.free_form):
        fields, count = _field_names(view, schema)
    else:
        fields = [name for name, _, _ in compiled.fields] if compiled is not None else []
    if count is None and size >= PROGRESS_MIN_BYTES and is_terminal(click.get_text_stream("stderr")):
        count = _count_marked(paths, schema_mark(schema))
    written = 0
    with _output(output) as out, progress(count or 0, f"exporting {schema}", work_bytes=size,
                                        output_on_terminal=to_terminal) as bar:
        if fmt == "csv":
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow(["step", "time", *fields])
            for rec in view.records(schema):
                data = rec.data
                writer.writerow([rec.step, rec.time, *[csv_value(data.get(f)) for f in fields]])
                written += 1
                if written % 4096 == 0:
                    bar.update(4096)
        else:
            for rec in view.records(schema):
                out.write(dumps_line({"step": rec.step, "time": rec.time, **rec.data}) + "\n")
                written += 1
                if written % 4096 == 0:
                    bar.update(4096)
        bar.update(written % 4096)
    if output is not None:
        click.echo(f"tracker: wrote {written} {schema} record{'s' if written != 1 else ''} to {output}", err=True)
    elif not written:
        click.echo(f"tracker: run {view.id} has no {schema} records", err=True)
