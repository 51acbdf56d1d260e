"""``tracker report``: one self-contained HTML file of chosen runs, to send to people who have no dashboard.

The file carries everything it shows: the dashboard's own modules (``util.js``
for the number formats, ``chart.js`` over the vendored uPlot, ``figures.js`` and
``panels.js`` for plugin panels, ``groups.js``, ``compare.js``'s tables) bundled
into one inline script by :func:`bundle`, the stylesheets inline, and the data
as strict JSON in a ``<script type="application/json">`` element (``<`` written
as ``\\u003c``, so no ``</script>`` or ``<!--`` can end it). A
Content-Security-Policy in the file lets only that script run (by its SHA-256)
and allows no request of any kind (``default-src 'none'``): it opens from disk,
offline, in any current browser, and nothing in it reaches the network. Run
names, tags, config values and notes are data shown as text; the notes'
markdown is rendered by :mod:`tracker.ui.markdown`, which escapes every
character first.

What goes in is only what the chosen runs hold (their info without the
store's paths, their metrics downsampled with each bucket's min and max, their
config, summaries and plugin panels, their media inline up to a budget, see
:mod:`.reportmedia`) and, unless ``environment=False``, each run's recorded
command, working directory, host and git commit (and the summaries of its
``environment`` and ``console`` records).
"""

from __future__ import annotations

import base64
import hashlib
import html
import math
import os
import re
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from tracker.core.errors import TrackerError
from tracker.core.text import flatten

STATIC = Path(__file__).resolve().parent / "static"
#: The report page's module: it and every module it imports (and they import) are bundled, each after its imports.
ENTRY = "report.js"
STYLES = ("vendor/uplot/uPlot.min.css", "style.css", "report.css")
#: The most runs one report holds (a report is read by people, and sent by mail).
MAX_RUNS = 500
#: Side-by-side summaries are shown for at most this many runs (as the compare page), panels for this many.
SUMMARY_RUNS = 20
PANEL_RUNS = 10
DEFAULT_POINTS = 1000
#: Summaries left out with ``environment=False``: where a run ran, and what it printed (which may name
#: the machine's folders).
PRIVATE_SCHEMAS = frozenset({"environment", "console"})

_IMPORT = re.compile(r'^import\s+(?P<what>.+?)\s+from\s+"(?P<src>[^"]+)";?[ \t]*$', re.M)
_EXPORT_DECL = re.compile(r"^export\s+(?=(?:async\s+)?function\b|class\b|const\b|let\b|var\b)", re.M)
_DECL_NAME = re.compile(r"^(?:async\s+)?(?:function\*?|class|const|let|var)\s+([A-Za-z_$][\w$]*)")
_EXPORT_LIST = re.compile(r"^export\s*\{(?P<names>[^}]*)\};?[ \t]*$", re.M)
_BLOCK_COMMENT = re.compile(r"^[ \t]*/\*.*?\*/[ \t]*$", re.M | re.S)
_EXPORT_DEFAULT = re.compile(r"^export\s+default\s+(?P<name>[A-Za-z_$][\w$]*);?[ \t]*$", re.M)


def _module(source: str, key: str, ids: dict[str, str]) -> str:
    """One ES module as a function body returning its exports (imports read from earlier modules)."""
    head: list[str] = []

    def imported(m: re.Match[str]) -> str:
        src = os.path.normpath(os.path.join(os.path.dirname(key), m.group("src")))
        if src not in ids:
            raise TrackerError(f"report bundle: {key} imports {m.group('src')}, which is not bundled before it")
        mod, what = ids[src], m.group("what").strip()
        default, _, named = what.partition(",") if not what.startswith("{") else ("", "", what)
        if default.strip().startswith("* as "):
            head.append(f"const {default.strip()[5:].strip()} = {mod};")
        elif default.strip():
            head.append(f"const {default.strip()} = {mod}.default;")
        named = named.strip()
        if named:
            pairs = [p.strip() for p in named.strip("{} ").split(",") if p.strip()]
            binds = [f"{a.strip()}: {b.strip()}" if " as " in p else p
                     for p in pairs for a, _, b in [p.partition(" as ")]]
            head.append(f"const {{ {', '.join(binds)} }} = {mod};")
        return ""

    # Commented-out code (uPlot keeps an `export function` inside a /* */ comment) is no code: out.
    source = _BLOCK_COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), source)
    body = _IMPORT.sub(imported, source)
    exports: dict[str, str] = {}
    for m in _EXPORT_DECL.finditer(body):
        name = _DECL_NAME.match(body[m.end():])
        if name is None:
            raise TrackerError(f"report bundle: {key}: an export this bundler does not read")
        exports[name.group(1)] = name.group(1)
    body = _EXPORT_DECL.sub("", body)
    for m in _EXPORT_LIST.finditer(body):
        for part in m.group("names").split(","):
            local, _, public = part.strip().partition(" as ")
            if local:
                exports[(public or local).strip()] = local.strip()
    body = _EXPORT_LIST.sub("", body)
    for m in _EXPORT_DEFAULT.finditer(body):
        exports["default"] = m.group("name")
    body = _EXPORT_DEFAULT.sub("", body)
    if re.search(r"^\s*(import|export)\b", body, re.M):
        raise TrackerError(f"report bundle: {key} holds an import or export this bundler does not read")
    names = ", ".join(f"{public}: {local}" for public, local in exports.items())
    return "\n".join(head) + "\n" + body + f"\nreturn {{ {names} }};"


def modules(entry: str = ENTRY) -> list[str]:
    """``entry`` and the modules it imports, transitively, each after the modules it imports.

    :raises TrackerError: an import cycle (an ES module graph the bundle cannot order).
    """
    order: list[str] = []
    state: dict[str, int] = {}

    def visit(key: str, path: tuple[str, ...]) -> None:
        if state.get(key) == 2:
            return
        if state.get(key) == 1:
            raise TrackerError(f"report bundle: the modules import each other in a circle: {' -> '.join(path)}")
        state[key] = 1
        source = _BLOCK_COMMENT.sub("", (STATIC / key).read_text(encoding="utf-8"))
        for m in _IMPORT.finditer(source):
            visit(os.path.normpath(os.path.join(os.path.dirname(key), m.group("src"))), (*path, key))
        state[key] = 2
        order.append(key)

    visit(entry, ())
    return order


def bundle(order: Sequence[str] | None = None) -> str:
    """The dashboard's ES modules as one classic script (each module a function scope, in order).

    :param order: the modules in order (default: :func:`modules`, the report page's graph).
    :raises TrackerError: a module imports one not bundled before it, or uses an import or export
        form this bundler does not read (a test bundles the shipped modules).
    """
    ids: dict[str, str] = {}
    parts = ['"use strict";']
    for i, key in enumerate(order if order is not None else modules()):
        source = (STATIC / key).read_text(encoding="utf-8")
        ids[key] = f"__m{i}"
        parts.append(f"// --- {key}\nconst __m{i} = (() => {{\n{_module(source, key, ids)}\n}})();")
    text = "\n".join(parts)
    # Nothing inside may end the inline script or open an HTML comment in it.
    return re.sub(r"</(script)", r"<\\/\1", text, flags=re.I).replace("<!--", "<\\!--")


def script_json(doc: Any) -> str:
    """Strict JSON to sit inside ``<script type="application/json">``: ``<``, ``>``, ``&`` and the two
    line separators JavaScript once refused are escaped, so the text can close nothing."""
    text = orjson.dumps(doc, option=orjson.OPT_NON_STR_KEYS).decode()
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))


# --- the data ------------------------------------------------------------------------------------

def _numbers(values: np.ndarray, ints: bool = False) -> orjson.Fragment:
    """A JSON array of ``values`` with 7 significant digits (what a chart can show), ``null`` where not finite."""
    if ints:
        return orjson.Fragment(orjson.dumps([int(v) for v in values.tolist()]))
    out = []
    for v in values.tolist():
        out.append(f"{v:.7g}" if math.isfinite(v) else "null")
    return orjson.Fragment(("[" + ",".join(out) + "]").encode())


def _strict(value: Any) -> Any:
    from tracker.ui.parts import strict

    return strict(value)


def run_doc(info: Any, figures: dict[str, Any], metrics: Sequence[str]) -> dict[str, Any]:
    """What the report holds of one run: its info without the machine's paths (no env, no traceback)."""
    from tracker.core.text import run_duration

    error = None
    if info.error:
        error = {"type": info.error.get("type"), "message": info.error.get("message")}
    stats = {m: {k: figures[m].get(k) for k in ("min", "max", "last", "count", "last_step")}
             for m in metrics if m in figures}
    return {"id": info.id, "name": info.name, "project": info.project, "group": info.group,
            "job_type": info.job_type, "status": info.status, "created_at": info.created_at,
            "ended_at": info.ended_at, "duration": run_duration(info), "last_step": info.last_step,
            "records": info.records, "tags": list(info.tags), "config_flat": dict(flatten(info.config or {})),
            "last_metrics": {m: info.last_metrics.get(m) for m in metrics if m in info.last_metrics},
            "stats": stats, "error": error}


def environment_doc(info: Any) -> dict[str, Any]:
    """The run's recorded command, working directory, host, git commit, Python and platform."""
    env = info.env or {}
    argv = env.get("argv")
    return {"command": " ".join(str(a) for a in argv) if isinstance(argv, list) else None, "cwd": env.get("cwd"),
            "host": env.get("host"), "git_commit": env.get("git_commit"), "python": env.get("python"),
            "platform": env.get("platform")}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def _config_diff(infos: Sequence[Any]) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    flats = [dict(flatten(i.config or {})) for i in infos]
    keys = list(dict.fromkeys(k for f in flats for k in f))
    diff, same = {}, {}
    absent = object()
    for k in keys:
        values = [f.get(k, absent) for f in flats]
        first = values[0]
        if all(v is not absent and _same(v, first) for v in values):
            same[k] = first
        else:
            diff[k] = [None if v is absent else v for v in values]
    return diff, same


def report_data(store: Any, infos: Sequence[Any], *, by: str | None = None, metrics: Sequence[str] | None = None,
                title: str | None = None, environment: bool = True, max_points: int = DEFAULT_POINTS,
                entries: Sequence[Any] | None = None, sweep: dict[str, Any] | None = None,
                max_media_bytes: int | None = None) -> dict[str, Any]:
    """Everything a report shows, as JSON-ready data (see :func:`build`)."""
    from tracker.read.aggregate import aggregate, group_runs, group_table, view_of
    from tracker.read.compare import key_metrics
    from tracker.ui.groups import groups_json
    from tracker.ui.series import downsample, present

    infos = list(infos)
    if not infos:
        raise TrackerError("a report needs at least one run: none was chosen")
    if len(infos) > MAX_RUNS:
        raise TrackerError(f"{len(infos)} runs: a report holds at most {MAX_RUNS}; choose fewer (RUN..., --project, "
                           "--sweep, or a filter)")
    if entries is None and getattr(store, "catalog", None) is not None:
        entries = store.catalog()
    figures = {e.info.id: e.metrics for e in entries or ()}
    logged = {m for i in infos for m in i.last_metrics} | {m for i in infos for m in figures.get(i.id, {})}
    chosen = list(dict.fromkeys(metrics)) if metrics else key_metrics(infos)
    for m in chosen:
        if m not in logged:
            names = sorted(logged)
            raise TrackerError(f"metric {m!r}: none of the {len(infos)} runs logged it (metrics logged: "
                               f"{', '.join(names[:30]) or 'none'}{', ...' if len(names) > 30 else ''})")
    if by is not None:
        group_runs(infos, by)  # a key no run has: one line, before anything is read
    doc: dict[str, Any] = {
        "title": title or (f"{len(infos)} runs" if len(infos) != 1 else infos[0].name or infos[0].id),
        "generated_at": time.time(), "by": by, "metrics": chosen, "max_points": max_points,
        "runs": [run_doc(i, figures.get(i.id, {}), chosen) for i in infos], "series": {}, "aggregates": {},
        "errors": {}, "sweep": sweep}
    doc["config_diff"], doc["config_same"] = _config_diff(infos)
    if by is not None:
        rows = group_table(infos, by, chosen)
        doc["groups"] = [{"key": r["group"], "n": r["n"], "runs": r["runs"], "metrics": r["metrics"]} for r in rows]
        kept = list(entries) if entries is not None else None
        for m in chosen:
            try:
                agg = aggregate(store, m, by, infos, max_points=max_points, entries=kept)
            except TrackerError as exc:
                doc["errors"][m] = str(exc)
                continue
            doc["aggregates"][m] = groups_json(agg, "mean")
    else:
        for m in chosen:
            doc["series"][m] = []
        for info in infos:
            cols = view_of(store, info).metrics()
            steps = cols["step"]
            for m in chosen:
                col = cols.get(m)
                if col is None:
                    continue
                keep = present(col)
                if not keep.any():
                    continue
                x, y, lo, hi = downsample(steps[keep], col[keep], max_points)
                doc["series"][m].append({"id": info.id, "x": _numbers(x, ints=True), "y": _numbers(y),
                                         "y_min": _numbers(lo), "y_max": _numbers(hi)})
    views = [view_of(store, i) for i in infos[:max(SUMMARY_RUNS, PANEL_RUNS)]]
    doc["sections"] = []
    if 1 <= len(infos) <= SUMMARY_RUNS:
        from tracker.read.compare import compare_runs

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            doc["sections"] = [s for s in compare_runs(views[:len(infos)])["sections"] if s["title"] != "Config"
                               and (environment or s["schema"] not in PRIVATE_SCHEMAS)]
    doc["summaries_left_out"] = max(0, len(infos) - SUMMARY_RUNS) if len(infos) > SUMMARY_RUNS else 0
    from tracker.ui.parts import panels_of

    doc["panels"] = []
    for view in views[:PANEL_RUNS]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                panels = panels_of(view)
            except Exception as exc:  # noqa: BLE001 - a run's panels failing leaves the report whole
                panels = [{"name": "panels", "title": "panels", "schema": "", "plugin": "", "error": str(exc)}]
        if panels:
            doc["panels"].append({"id": view.id, "panels": panels})
    doc["panels_left_out"] = max(0, len(infos) - PANEL_RUNS)
    doc["environment"] = {i.id: environment_doc(i) for i in infos} if environment else None
    from tracker.ui.reportmedia import DEFAULT_MAX_MEDIA_BYTES, media_doc

    doc["media"] = media_doc(store, infos, DEFAULT_MAX_MEDIA_BYTES if max_media_bytes is None else max_media_bytes)
    return _strict_doc(doc)


def _strict_doc(doc: dict[str, Any]) -> dict[str, Any]:
    """The document with NaN and infinities as the store writes them (series are already JSON)."""
    series = doc.pop("series")
    out = _strict(doc)
    out["series"] = series
    return out


# --- the file ------------------------------------------------------------------------------------

def build(store: Any, infos: Sequence[Any], *, by: str | None = None, metrics: Sequence[str] | None = None,
          title: str | None = None, notes: str | None = None, environment: bool = True,
          max_points: int = DEFAULT_POINTS, entries: Sequence[Any] | None = None,
          sweep: dict[str, Any] | None = None, max_media_bytes: int | None = None) -> str:
    """The report of ``infos`` as one HTML text (see the module's docstring).

    :param by: group the runs (``group``, ``project``, ``tag``, ``config.KEY``...): a table of groups and one line
        and band per group on each chart.
    :param metrics: the metrics charted and tabled (default: the metrics most runs logged, as ``tracker runs``).
    :param notes: markdown shown under the title (escaped, then rendered).
    :param environment: include each run's recorded command, working directory, host and git commit.
    :param sweep: the sweep the runs are the trials of (:func:`tracker.sweeps.web.sweep_summary`): the report
        names its best value, trial and parameters.
    :param max_media_bytes: the bytes of audio, video, 3D and HTML carried inline (default
        :data:`tracker.ui.reportmedia.DEFAULT_MAX_MEDIA_BYTES`); beyond them a poster frame and a note.
    :raises TrackerError: no runs, too many, a metric none of them logged, a ``by`` none of them has.
    """
    from tracker.ui.markdown import render

    doc = report_data(store, infos, by=by, metrics=metrics, title=title, environment=environment,
                      max_points=max_points, entries=entries, sweep=sweep,
                      max_media_bytes=max_media_bytes)
    script = bundle()
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    csp = (f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src data:; "
           "media-src data:; font-src data:; base-uri 'none'; form-action 'none'")
    styles = "\n".join((STATIC / s).read_text(encoding="utf-8") for s in STYLES)
    styles = styles.replace("</", "<\\/")
    heading = html.escape(doc["title"])
    notes_html = f'<section class="box notes" id="notes">{render(notes)}</section>' if notes and notes.strip() else ""
    return (
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{csp}\">\n"
        "<meta name=\"generator\" content=\"tracker report\">\n<link rel=\"icon\" href=\"data:,\">\n"
        f"<title>{heading}</title>\n<style>\n{styles}\n</style>\n</head>\n<body class=\"report\">\n"
        "<header class=\"top\"><span class=\"brand\">tracker</span>"
        "<nav class=\"crumbs\"><span>report</span></nav></header>\n"
        f"<main class=\"app report-page\">\n<div class=\"run-head\"><h1 id=\"title\">{heading}</h1>"
        "<p class=\"muted\" id=\"report-meta\"></p></div>\n"
        f"{notes_html}\n<div id=\"report\"><noscript><p>This report draws its tables and charts with "
        "JavaScript.</p></noscript></div>\n</main>\n"
        f"<script type=\"application/json\" id=\"report-data\">{script_json(doc)}</script>\n"
        f"<script>{script}</script>\n</body>\n</html>\n")


def check_output(path: str | os.PathLike[str]) -> Path:
    """``path`` as a report may be written there: its folder exists and it is not a folder itself.

    :raises TrackerError: one line naming what is wrong.
    """
    target = Path(path)
    folder = target.parent
    if not folder.is_dir():
        raise TrackerError(f"-o {path}: the folder {folder} does not exist")
    if target.is_dir():
        raise TrackerError(f"-o {path}: is a folder; give a file name such as {target / 'report.html'}")
    return target


def write(path: str | os.PathLike[str], text: str) -> Path:
    """Write the report under a temporary name in its folder, then rename it into place.

    :raises TrackerError: the folder does not exist or cannot be written (one line naming it).
    """
    target = check_output(path)
    folder = target.parent
    tmp = folder / f".{target.name}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise TrackerError(f"-o {path}: cannot write it: {exc.strerror}") from None
    return target


def read_notes(path: str | os.PathLike[str]) -> str:
    """The markdown of ``--notes``.

    :raises TrackerError: the file does not exist, is not a file, or is not UTF-8 text (one line).
    """
    from tracker.core.files import check_regular

    p = Path(path)
    if not p.exists():
        raise TrackerError(f"--notes {path}: no such file")
    try:
        check_regular(p, "--notes ")
        data = p.read_bytes()
    except TrackerError:
        raise
    except OSError as exc:
        raise TrackerError(f"--notes {path}: cannot read it: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TrackerError(f"--notes {path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})") \
            from None


__all__ = ["ENTRY", "MAX_RUNS", "build", "bundle", "check_output", "modules", "read_notes", "report_data", "run_doc",
           "script_json", "write"]
