"""The ``tracker fft`` command group: ``tracker fft report RUN [RUN...] -o report.html``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from tracker import TrackerError

from .config import SETTINGS
from .report import StudyRun, build_report

if TYPE_CHECKING:
    from tracker import CliContext

__all__ = ["fft_group"]

INSTALL_HINT = 'the report needs matplotlib: pip install "tracker-fft-study[report]"'


@click.group("fft")
def fft_group() -> None:
    """FFT study: reports of learned-FFT runs."""


@fft_group.command("report")
@click.argument("runs", nargs=-1, required=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("fft_report.html"), show_default=True, help="HTML file to write.")
@click.option("--title", default="FFT study report", show_default=True, help="Page heading.")
@click.option("--dpi", type=click.IntRange(50, 600), default=None,
              help="Figure resolution [default: report_dpi of tracker.toml, else 110].")
@click.option("--png-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Also write every figure as a PNG file into this folder.")
@click.pass_obj
def report(obj: CliContext, runs: tuple[str, ...], output: Path, title: str, dpi: int | None,
           png_dir: Path | None) -> None:
    """Write one self-contained HTML report of the fft.* records of RUN(s).

    Loss curves of all models on one chart, the parameter table, one gate
    heatmap per model and each loss landscape, with the figures embedded.

    \b
    Example:
      tracker fft report 3f2a -o study.html
      tracker fft report 3f2a 9c1e --png-dir figures/
    """
    try:
        import matplotlib  # noqa: F401 - only checked here, to fail before reading runs
    except ImportError:
        raise click.ClickException(INSTALL_HINT) from None
    try:
        loaded = [StudyRun.load(obj.store.run(prefix)) for prefix in runs]
        if not any(r.has_records() for r in loaded):
            ids = ", ".join(r.info.id for r in loaded)
            raise click.ClickException(f"no fft.* records in run(s) {ids}")
        rendered = build_report(loaded, title=title, dpi=dpi or SETTINGS.report_dpi,
                                prune_threshold=SETTINGS.prune_threshold)
    except TrackerError as err:
        raise click.ClickException(str(err)) from None
    try:
        rendered.write(output, png_dir)
    except OSError as err:
        raise click.ClickException(f"cannot write the report: {err}") from None
    size = output.stat().st_size / 1024
    click.echo(f"wrote {output} ({len(rendered.figures)} figures, {size:.0f} KiB)")
