"""``tracker export``: one schema's records of a run as CSV or JSON Lines (streamed), or Parquet."""

from __future__ import annotations

import contextlib
import csv
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import click

from tracker.cli import CliContext
from tracker.cli.options import fail, handle_errors, require_schema, schema_option
from tracker.cli.render import csv_value, dumps_line
from tracker.cli.terminal import PROGRESS_MIN_BYTES, is_terminal, progress
from tracker.core.format import METRICS, schema_mark
from tracker.host.bus import TrackerWarning

EXPORT_FORMATS = ("csv", "jsonl", "parquet")
#: ``-o``'s suffix -> the format written.
SUFFIXES = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}
PYARROW_INSTALL = 'pip install pyarrow (or pip install "tracker-core[query]")'
_CHUNK = 1 << 20


def export_format(fmt: str | None, output: Path | None) -> str:
    """The format to write: ``--format``, else ``-o``'s suffix, else CSV (on stdout).

    An unknown suffix, or one that says another format than ``--format``, is one line on stderr (exit 2).
    """
    if output is None:
        if fmt == "parquet":
            fail("--format parquet writes a file: give it with -o FILE.parquet", 2)
        return fmt or "csv"
    by_suffix = SUFFIXES.get(output.suffix.lower())
    if by_suffix is None and fmt is None:
        known = ", ".join(SUFFIXES)
        fail(f"cannot tell the format of -o {output.name}: its suffix {output.suffix or '(none)'} is not one of "
             f"{known} (or give --format)", 2)
    if by_suffix is not None and fmt is not None and fmt != by_suffix:
        fail(f"--format {fmt}, but -o {output.name} says {by_suffix}: give one or make them agree", 2)
    return fmt or by_suffix  # type: ignore[return-value]


def _pyarrow() -> Any:
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401 - the writer lives there
    except ImportError:
        fail(f"writing Parquet needs pyarrow, which is not installed: {PYARROW_INSTALL}")
    return pyarrow


def _column(pa: Any, values: list[Any]) -> Any:
    """One Parquet column: the values' own type, else (mixed types) their JSON text."""
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array([None if v is None else dumps_line(v) for v in values], pa.string())


def _write_parquet(path: Path, view: Any, schema: str, fields: list[str], bar: Any) -> int:
    """The records as one Parquet table (held in memory while written: columnar files are)."""
    pa = _pyarrow()
    columns: dict[str, list[Any]] = {"step": [], "time": []}
    seen: dict[str, None] = dict.fromkeys(fields)
    n = 0
    for rec in view.records(schema):
        for k in rec.data:
            if k not in seen:
                seen[k] = None
        for name in seen:
            columns.setdefault(name, [None] * n)
        columns["step"].append(rec.step)
        columns["time"].append(rec.time)
        for name in seen:
            columns[name].append(rec.data.get(name))
        n += 1
        if n % 4096 == 0:
            bar.update(4096)
    table = pa.table({name: _column(pa, values) for name, values in columns.items()})
    partial = path.with_name(path.name + ".partial")
    try:
        pa.parquet.write_table(table, partial)
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            partial.unlink()
        raise
    bar.update(n % 4096)
    return n


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
              help="csv, jsonl or parquet (default: from the suffix of -o: .csv, .jsonl, .parquet; else csv).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True, path_type=Path),
              help="Write to this file instead of stdout.")
@click.pass_obj
@handle_errors
def export_cmd(obj: CliContext, run: str, schema: str | None, fmt: str | None, output: Path | None) -> None:
    """Export one schema's records of a run, one row per record: step, time, then the fields.

    The format comes from -o's suffix (.csv, .jsonl, .parquet) unless
    --format says it. CSV and JSON Lines stream the run's segments (merged by
    time across writers), so memory stays flat whatever the run's size; CSV
    writes NaN and infinities as NaN, inf and -inf and lists as JSON; JSON
    Lines writes them as the store does ("NaN", "Infinity", "-Infinity").
    Parquet (needs pyarrow) keeps numbers as numbers, NaN included.

    \b
    Examples:
      tracker export 3f2a -o metrics.csv
      tracker export 3f2a -o metrics.parquet
      tracker export 3f2a --schema fft.loss_point --format jsonl | jq .total_loss
    """
    fmt = export_format(fmt, output)
    if fmt == "parquet":
        _pyarrow()  # before reading anything: the one line that says how to install it
    view = obj.store.run(run)
    host = obj.host
    schema = schema or METRICS
    compiled = host.schemas.get(schema)
    held = view.schemas()
    if schema not in held:
        if compiled is None:
            require_schema(host, schema)
        fail(f"run {view.id} has no {schema} records (it holds: {', '.join(held) or 'no records'}); "
             "nothing written")
    # A folder's segments give the progress bar its size; the team database has no files (reading protocol only).
    segment_paths = getattr(view, "segment_paths", None)
    paths = segment_paths() if segment_paths is not None else []
    size = sum(p.stat().st_size for p in paths)
    to_terminal = output is None and is_terminal()
    count: int | None = None
    if fmt in ("csv", "parquet") and (compiled is None or compiled.free_form):
        fields, count = _field_names(view, schema)
    else:
        fields = [name for name, _, _ in compiled.fields] if compiled is not None else []
    if count is None and paths and size >= PROGRESS_MIN_BYTES and is_terminal(click.get_text_stream("stderr")):
        count = _count_marked(paths, schema_mark(schema))
    written = 0
    if fmt == "parquet":
        with progress(count or 0, f"exporting {schema}", work_bytes=size) as bar:
            written = _write_parquet(output, view, schema, fields, bar)  # type: ignore[arg-type]
        click.echo(f"tracker: wrote {written} {schema} record{'s' if written != 1 else ''} to {output}", err=True)
        return
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
