"""The self-contained HTML study report: figures as base64 PNGs, tables as HTML.

Needs matplotlib (the ``report`` extra); it is imported when a report is
rendered, never at plugin load. Figures are drawn on the Agg canvas without
pyplot, so rendering leaves no global matplotlib state behind.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import io
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from tracker import RunInfo, RunView, Table

from . import study

__all__ = ["Figure", "Report", "SCHEMA_NAMES", "StudyRun", "build_report"]

SCHEMA_NAMES = ("fft.loss_point", "fft.params", "fft.heatmap", "fft.landscape", "fft.trace")


@attrs.frozen
class StudyRun:
    """One run's info and its ``fft.*`` tables, read once."""

    info: RunInfo
    tables: dict[str, Table]

    @classmethod
    def load(cls, view: RunView) -> StudyRun:
        """Read the ``fft.*`` tables of a ``tracker`` RunView."""
        return cls(view.info, {name: view.table(name) for name in SCHEMA_NAMES})

    def has_records(self) -> bool:
        """Whether the run holds any ``fft.*`` record."""
        return any(len(table) for table in self.tables.values())


@attrs.frozen
class Figure:
    """One figure of the report: a file-name stem, a caption and the PNG bytes."""

    stem: str
    caption: str
    png: bytes


@attrs.frozen
class Report:
    """A rendered report: the HTML document and the figures embedded in it."""

    html: str
    figures: list[Figure]

    def write(self, path: Path, png_dir: Path | None = None) -> None:
        """Write the HTML file and, when ``png_dir`` is given, each figure as a PNG there."""
        Path(path).write_text(self.html, encoding="utf-8")
        if png_dir is not None:
            Path(png_dir).mkdir(parents=True, exist_ok=True)
            for fig in self.figures:
                (Path(png_dir) / f"{fig.stem}.png").write_bytes(fig.png)


def _load_matplotlib():
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    return MplFigure, FigureCanvasAgg


# --- figures ------------------------------------------------------------------------------


class _Painter:
    def __init__(self, dpi: int) -> None:
        self.figure_cls, self.canvas_cls = _load_matplotlib()
        self.dpi = dpi

    def new(self, width: float, height: float):
        fig = self.figure_cls(figsize=(width, height), layout="constrained")
        self.canvas_cls(fig)
        return fig

    def png(self, fig) -> bytes:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=self.dpi)
        return buf.getvalue()


def _loss_figure(p: _Painter, curves: dict[str, tuple[np.ndarray, np.ndarray]]) -> bytes:
    fig = p.new(8.0, 4.2)
    ax = fig.add_subplot()
    finite = np.concatenate([v[np.isfinite(v)] for _, v in curves.values()] or [np.zeros(0)])
    for label, (steps, values) in curves.items():
        marker = "o" if values.size < 30 else None
        ax.plot(steps, values, marker=marker, markersize=3, linewidth=1.6, label=label)
    if finite.size and finite.min() > 0:
        ax.set_yscale("log")
    ax.set_xlabel("step")
    ax.set_ylabel("total loss")
    ax.set_title("Total loss per model")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small", loc="upper right", ncols=1 if len(curves) < 8 else 2)
    return p.png(fig)


def _heatmap_figure(p: _Painter, rec: dict[str, Any], label: str, threshold: float) -> bytes:
    stages, butterflies = int(rec["stages"]), int(rec["butterflies"])
    gates = np.asarray(rec["gates"], dtype=np.float64).reshape(stages, butterflies)
    panels = [("gates", gates, "viridis", (0.0, 1.0))]
    if rec["twiddle_mag"] is not None:
        mag = np.asarray(rec["twiddle_mag"], dtype=np.float64).reshape(stages, butterflies)
        panels.append(("twiddle magnitude", mag, "magma", (None, None)))
    mask = rec["freq_mask"]
    height = 0.35 * stages + 1.4
    fig = p.new(8.0, height * len(panels) + (2.0 if mask is not None else 0.0))
    axes = fig.subplots(len(panels) + (mask is not None), 1, squeeze=False)[:, 0]
    for ax, (name, grid, cmap, (lo, hi)) in zip(axes, panels, strict=False):
        image = ax.imshow(grid, aspect="auto", cmap=cmap, vmin=lo, vmax=hi,
                          interpolation="nearest", origin="upper")
        ax.set_ylabel("stage")
        ax.set_xlabel("butterfly")
        ax.set_yticks(range(stages))
        ax.set_title(f"{label}: {name}")
        fig.colorbar(image, ax=ax, pad=0.01)
        if name == "gates":
            rows, cols = np.nonzero(grid < threshold)
            ax.scatter(cols, rows, marker="x", s=14, color="white", linewidths=0.8)
            ax.set_title(f"{label}: gates ({rows.size} of {grid.size} pruned, "
                         f"marked x: gate < {threshold:g})")
    if mask is not None:
        ax = axes[-1]
        values = np.asarray(mask, dtype=np.float64)
        ax.plot(np.arange(values.size), values, drawstyle="steps-mid", color="tab:blue")
        ax.set_xlabel("index")
        ax.set_ylabel("value")
        ax.set_title(f"{label}: frequency mask")
        ax.grid(True, alpha=0.3)
    return p.png(fig)


def _landscape_figure(p: _Painter, rec: dict[str, Any], label: str) -> bytes:
    x = np.asarray(rec["x"], dtype=np.float64)
    y = np.asarray(rec["y"], dtype=np.float64)
    z = np.asarray(rec["z"], dtype=np.float64).reshape(y.size, x.size)
    xo, yo = np.argsort(x, kind="stable"), np.argsort(y, kind="stable")
    x, y, z = x[xo], y[yo], z[np.ix_(yo, xo)]
    at = study.grid_argmin(z)
    fig = p.new(6.4, 5.0)
    ax = fig.add_subplot()
    ax.set_title(f"{label}: loss landscape")
    finite = z[np.isfinite(z)]
    if finite.size == 0:
        ax.text(0.5, 0.5, "no finite loss values", transform=ax.transAxes, ha="center",
                va="center", color="0.4")
    if x.size < 2 or y.size < 2:
        # A single row or column (or point): a loss curve along the axis that varies.
        along_x = x.size >= y.size
        axis, values = (x, z[0]) if along_x else (y, z[:, 0])
        ax.plot(axis, values, marker="o", markersize=3)
        ax.set_xlabel(str(rec["x_label"] if along_x else rec["y_label"]))
        ax.set_ylabel("loss")
        ax.grid(True, alpha=0.3)
        if at is not None:
            k = at[1] if along_x else at[0]
            ax.plot(axis[k], values[k], marker="*", markersize=14, color="red",
                    markeredgecolor="white", linestyle="none", label=f"min {values[k]:.4g}")
            ax.legend(loc="upper right", fontsize="small")
        return p.png(fig)
    use_log = finite.size > 0 and finite.min() > 0 and finite.max() / finite.min() > 100
    shown = np.ma.masked_invalid(np.log10(np.where(z > 0, z, np.nan)) if use_log else z)
    if shown.count() and np.ptp(shown.compressed()) > 0:
        filled = ax.contourf(x, y, shown, levels=20, cmap="viridis")
        ax.contour(x, y, shown, levels=filled.levels[::4], colors="white", linewidths=0.5)
    else:
        filled = ax.pcolormesh(x, y, shown, shading="nearest", cmap="viridis")
    fig.colorbar(filled, ax=ax, label="log10 loss" if use_log else "loss")
    if at is not None:
        ax.plot(x[at[1]], y[at[0]], marker="*", markersize=14, color="red",
                markeredgecolor="white", linestyle="none", label=f"min {z[at]:.4g}")
        ax.legend(loc="upper right", fontsize="small")
    ax.set_xlabel(str(rec["x_label"]))
    ax.set_ylabel(str(rec["y_label"]))
    return p.png(fig)


# --- HTML ---------------------------------------------------------------------------------

_CSS = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 70em;
       padding: 0 1em; color: #222; }
h1 { margin-bottom: 0.2em; } h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
.meta, figcaption, .note, .empty { color: #555; font-size: 0.9em; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.88em; }
th, td { padding: 0.25em 0.7em; border-bottom: 1px solid #e2e2e2; text-align: right; }
th { background: #f3f3f3; } td.text, th.text { text-align: left; }
figure { margin: 1em 0; } img { max-width: 100%; height: auto; }
"""


def _cell(value: Any) -> str:
    if value is None:
        return "&ndash;"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else html.escape(f"{value:.4g}")
    if isinstance(value, int):
        return f"{value:,}"
    return html.escape(str(value))


def _table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    if not rows:
        return '<p class="empty">Nothing recorded.</p>'
    cols = list(columns or dict.fromkeys(k for row in rows for k in row))
    text = {c for c in cols if all(isinstance(r.get(c), str) or r.get(c) is None for r in rows)}

    def cls(c: str) -> str:
        return ' class="text"' if c in text else ""

    head = "".join(f"<th{cls(c)}>{html.escape(c)}</th>" for c in cols)
    body = "".join(
        "<tr>" + "".join(f"<td{cls(c)}>{_cell(row.get(c))}</td>" for c in cols) + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _img(fig: Figure) -> str:
    data = base64.b64encode(fig.png).decode("ascii")
    caption = html.escape(fig.caption)
    return (f'<figure><img src="data:image/png;base64,{data}" alt="{caption}">'
            f"<figcaption>{caption}</figcaption></figure>")


def _run_labels(runs: Sequence[StudyRun]) -> list[str]:
    names = [r.info.name or r.info.id[:8] for r in runs]
    return [n if names.count(n) == 1 else r.info.id[:8] for n, r in zip(names, runs, strict=True)]


def _record(table: Table, idx: int, fields: Sequence[str]) -> dict[str, Any]:
    return {f: table[f][idx] for f in fields}


def _stem(*parts: str) -> str:
    text = "-".join(p for p in parts if p)
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[:80] or "figure"


def build_report(
    runs: Sequence[StudyRun],
    *,
    title: str = "FFT study report",
    dpi: int = 110,
    prune_threshold: float = study.DEFAULT_PRUNE_THRESHOLD,
) -> Report:
    """Render the study report of one or more runs.

    :param runs: the runs, e.g. ``[StudyRun.load(store.run(prefix)), ...]``.
    :param title: the page heading.
    :param dpi: resolution of the embedded PNGs.
    :param prune_threshold: gates below it are marked and counted as pruned.
    :raises ImportError: when matplotlib is not installed.
    """
    painter = _Painter(dpi)
    multi = len(runs) > 1
    labels = _run_labels(runs)
    figures: list[Figure] = []
    sections: dict[str, list[str]] = {"loss": [], "params": [], "gates": [], "land": []}
    curves: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    loss_rows, model_rows, breakdown_rows = [], [], []

    def tag(rows: list[dict[str, Any]], run: str) -> list[dict[str, Any]]:
        return [{"run": run, **r} for r in rows] if multi else rows

    def label_of(run: str, model: str) -> str:
        return f"{run}/{model or '(default)'}" if multi else model or "(default)"

    for study_run, run in zip(runs, labels, strict=True):
        t = study_run.tables
        for model, curve in study.loss_curves(t["fft.loss_point"]).items():
            curves[label_of(run, model)] = curve
        loss_rows += tag(study.loss_curve_rows(t["fft.loss_point"]), run)
        model_rows += tag(study.model_rows(t["fft.params"], t["fft.loss_point"],
                                           t["fft.trace"]), run)
        breakdown_rows += tag(study.param_breakdown_rows(t["fft.params"]), run)
        heat = t["fft.heatmap"]
        gate_rows = study.gate_rows(heat, prune_threshold)
        for model, idx in study.latest_by_model(heat).items():
            label = label_of(run, model)
            rec = _record(heat, idx, ("stages", "butterflies", "gates", "twiddle_mag",
                                      "freq_mask"))
            fig = Figure(_stem("heatmap", run if multi else "", model),
                         f"Gates and twiddle magnitudes of {label} at step {heat['step'][idx]}",
                         _heatmap_figure(painter, rec, label, prune_threshold))
            figures.append(fig)
            mine = [{k: v for k, v in r.items() if k != "model_id"}
                    for r in gate_rows if r["model_id"] == model]
            sections["gates"] += [f"<h3>{html.escape(label)}</h3>", _img(fig), _table(mine)]
        land = t["fft.landscape"]
        for idx, row in enumerate(study.landscape_rows(land)):
            label = label_of(run, row["model_id"])
            rec = _record(land, idx, ("x", "y", "z", "x_label", "y_label"))
            fig = Figure(_stem("landscape", run if multi else "", row["model_id"], str(idx)),
                         f"Loss landscape of {label} over {row['x_label']} and "
                         f"{row['y_label']} (step {row['step']})",
                         _landscape_figure(painter, rec, label))
            figures.append(fig)
            sections["land"] += [f"<h3>{html.escape(label)}</h3>", _img(fig),
                                 _table([{k: v for k, v in row.items() if k != "model_id"}])]
    if curves:
        fig = Figure("loss_curves", "Total loss of every model against step",
                     _loss_figure(painter, curves))
        figures.insert(0, fig)
        sections["loss"].append(_img(fig))
    sections["loss"].append(_table(loss_rows))
    sections["loss"].append('<p class="note">improvement = (first - last) / |first|.</p>')
    sections["params"].append(_table(model_rows))
    sections["params"].append('<p class="note">memory_bytes = 4 bytes per 32-bit parameter; '
                              "q8_packed counts 32-bit words of four int8 values.</p>")
    if breakdown_rows:
        sections["params"] += ["<h3>Parameters by component</h3>", _table(breakdown_rows)]
    run_rows = [{"run": lab, "id": r.info.id, "name": r.info.name, "project": r.info.project,
                 "status": r.info.status} for lab, r in zip(labels, runs, strict=True)]
    now = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    empty = '<p class="empty">No {} records.</p>'
    body = [
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="meta">{len(runs)} run(s), {len(figures)} figure(s), generated {now}.</p>',
        _table(run_rows),
        "<h2>Loss curves</h2>", *sections["loss"],
        "<h2>Parameters and memory</h2>", *sections["params"],
        "<h2>Gate heatmaps</h2>",
        *(sections["gates"] or [empty.format("fft.heatmap")]),
        "<h2>Loss landscapes</h2>",
        *(sections["land"] or [empty.format("fft.landscape")]),
    ]
    doc = ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
           f"<title>{html.escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
           + "\n".join(body) + "\n</body>\n</html>\n")
    return Report(doc, figures)
