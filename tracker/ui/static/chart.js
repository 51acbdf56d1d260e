// Charts: metric charts over uPlot (one run or several overlaid), and the canvas heatmap and bar chart.

import uPlot from "./vendor/uplot/uPlot.esm.js";
import { el, clear, cssVar, fmtNum, smooth } from "./util.js";

const HEIGHT = 220;

function theme() {
  return { fg: cssVar("--fg") || "#222", muted: cssVar("--muted") || "#777", grid: cssVar("--grid") || "#ddd",
    bg: cssVar("--bg") || "#fff" };
}

function axes(t, xTime, xLabel, yLabel) {
  const common = { stroke: t.muted, grid: { stroke: t.grid, width: 1 }, ticks: { stroke: t.grid, width: 1 },
    font: "11px system-ui, sans-serif", labelFont: "11px system-ui, sans-serif" };
  return [
    { ...common, label: xLabel || undefined, labelSize: xLabel ? 16 : 0 },
    { ...common, label: yLabel || undefined, labelSize: yLabel ? 16 : 0, size: 56,
      values: (u, vals) => vals.map((v) => (v === null ? "" : fmtNum(v, 3))) },
  ];
}

/** Sort (x, ...ys) by x when x goes back (repeated or out-of-order steps); stable. */
function sortedByX(cols) {
  const x = cols[0];
  let asc = true;
  for (let i = 1; i < x.length; i++) if (x[i] < x[i - 1]) { asc = false; break; }
  if (asc) return cols;
  const idx = x.map((_, i) => i).sort((a, b) => x[a] - x[b] || a - b);
  return cols.map((c) => idx.map((i) => c[i]));
}

function positive(ys) { return ys.map((v) => (v === null || v === undefined || v > 0 ? v : null)); }

function alpha(color, a) {
  if (color.startsWith("hsl(")) return color.replace(")", ` / ${a})`);
  if (color.startsWith("#") && color.length === 7) return color + Math.round(a * 255).toString(16).padStart(2, "0");
  return color;
}

/** Keep a uPlot chart as wide as its container. */
function fitWidth(u, node) {
  const ro = new ResizeObserver(() => {
    const w = Math.max(120, Math.floor(node.clientWidth));
    if (Math.abs(w - u.width) > 1) u.setSize({ width: w, height: u.height });
  });
  ro.observe(node);
  return ro;
}

/**
 * A metric chart: one run (min/max band, raw line, smoothed line) or several runs overlaid.
 * runs: [{id, label, color, x: [], y: [], y_min: [], y_max: []}]
 *
 * Zoom: dragging over the chart magnifies the x range at once and calls onZoom({min, max}) (in the
 * unit of x); the page fetches that range from the server at full resolution and hands it to
 * setZoomRuns(). Until a double-click (which calls onZoom(null)), the range's series is drawn and
 * setRuns() only keeps the whole series (live appends) for when the zoom is reset.
 * The chart's node carries data-view ("full", "zoomed": magnified, "range": the range's series drawn),
 * data-points (points drawn within the x range in view) and, while zoomed, data-x-min and data-x-max.
 */
export class MetricChart {
  constructor(node, { title, xMode = "step", log = false, smoothing = 0, height = HEIGHT, onZoom = null }) {
    this.node = node;
    this.title = title;
    this.xMode = xMode;
    this.log = log;
    this.smoothing = smoothing;
    this.height = height;
    this.onZoom = onZoom;
    this.runs = [];
    this.zoomed = false;
    this.zoomRange = null;
    this.zoomRuns = null;
    this.zoomNote = "";
    this.u = null;
    this.readout = el("div", { class: "readout" });
    this.plotNode = el("div", { class: "plot" });
    clear(node);
    node.append(this.plotNode, this.readout);
  }

  /** The whole series of each run. While a zoomed range is drawn, they are kept for the reset. */
  setRuns(runs) {
    this.runs = runs;
    if (this.zoomRuns) { this.updateCount(); return; }
    this.render();
  }

  /** The series of the zoomed range (fetched at full resolution); ignored once the zoom is reset. */
  setZoomRuns(runs) {
    if (!this.zoomed) return;
    this.zoomRuns = runs;
    this.zoomNote = "";
    this.render();
  }

  /** The zoomed range could not be fetched: keep the magnified view and say why. */
  zoomFailed(message) {
    if (!this.zoomed) return;
    this.zoomNote = `cannot load the range: ${message}`;
    if (this.u) this.showReadout(this.u);
  }

  /** Back to the whole series (double-click, or a change of x that makes the range meaningless). */
  resetZoom(redraw = true) {
    const was = this.zoomed;
    this.zoomed = false;
    this.zoomRange = null;
    this.zoomRuns = null;
    this.zoomNote = "";
    if (was && this.onZoom) this.onZoom(null);
    if (redraw) this.render();
  }

  setOptions(opts) {
    const xChanged = "xMode" in opts && opts.xMode !== this.xMode;
    const rebuild = ("log" in opts && opts.log !== this.log) || xChanged;
    Object.assign(this, opts);
    if (xChanged) this.resetZoom(false);
    if (rebuild) this.destroy();
    this.render();
  }

  destroy() {
    if (this.ro) this.ro.disconnect();
    if (this.u) this.u.destroy();
    this.u = null;
  }

  data() {
    const single = (this.zoomRuns || this.runs).length === 1;
    const tables = [];
    const series = [{}];
    const bands = [];
    let col = 1;
    for (const r of this.zoomRuns || this.runs) {
      let ys = r.y.slice();
      let lo = (r.y_min || r.y).slice();
      let hi = (r.y_max || r.y).slice();
      if (this.log) { ys = positive(ys); lo = positive(lo); hi = positive(hi); }
      const sm = smooth(ys, this.smoothing);
      const cols = [r.x.slice()];
      if (single) {
        cols.push(lo, hi);
        series.push({ label: "min", stroke: "transparent", width: 0, points: { show: false } },
          { label: "max", stroke: "transparent", width: 0, points: { show: false } });
        bands.push({ series: [col + 1, col], fill: alpha(r.color, 0.14) });
        col += 2;
      }
      if (this.smoothing > 0) {
        cols.push(ys, sm);
        series.push({ label: `${r.label} (raw)`, stroke: alpha(r.color, 0.3), width: 1, points: { show: false } },
          { label: r.label, stroke: r.color, width: 2, points: { show: ys.length < 40 } });
        col += 2;
      } else {
        cols.push(ys);
        series.push({ label: r.label, stroke: r.color, width: 1.5, points: { show: ys.length < 40 } });
        col += 1;
      }
      tables.push(sortedByX(cols));
    }
    let data;
    if (tables.length === 1) data = tables[0];
    else if (tables.length === 0) data = [[]];
    else data = uPlot.join(tables);
    return { data, series, bands };
  }

  /** A metric logged once per run reads better as its value than as a chart of one point. */
  renderStat() {
    this.destroy();
    this.isStat = true;
    clear(this.plotNode);
    clear(this.readout);
    const many = this.runs.length > 1;
    for (const r of this.runs) {
      const i = r.x.length - 1;
      const where = i < 0 ? "not logged" : this.xMode === "time" ? new Date(r.x[i] * 1000).toLocaleString() : `step ${fmtNum(r.x[i])}`;
      const row = el("div", { class: "stat" });
      if (many) {
        const sw = el("span", { class: "swatch" });
        sw.style.background = r.color;
        row.append(el("span", { class: "val stat-label" }, sw, r.label));
      }
      row.append(el("span", { class: "stat-value", text: i < 0 || r.y[i] === null ? "–" : fmtNum(r.y[i]) }),
        el("span", { class: "muted", text: where }));
      this.plotNode.append(row);
    }
  }

  render() {
    if (!this.zoomed && this.runs.length && this.runs.every((r) => r.x.length <= 1)) { this.renderStat(); return; }
    if (this.isStat) { clear(this.plotNode); this.isStat = false; }
    const { data, series, bands } = this.data();
    if (this.u && this.u.series.length === series.length) {
      this.u.setData(data, !this.zoomed);
      this.keepZoom();
      this.updateCount();
      this.showReadout(this.u);
      return;
    }
    this.destroy();
    const t = theme();
    const xTime = this.xMode === "time";
    const width = Math.max(120, this.node.clientWidth || 400);
    const opts = {
      width, height: this.height,
      scales: { x: { time: xTime }, y: { distr: this.log ? 3 : 1 } },
      axes: axes(t, xTime),
      series, bands,
      legend: { show: false },
      cursor: { drag: { x: true, y: false, setScale: true }, points: { size: 6 } },
      hooks: {
        setCursor: [(u) => this.showReadout(u)],
        setSelect: [(u) => this.selected(u)],
      },
    };
    this.u = new uPlot(opts, data, this.plotNode);
    this.u.over.addEventListener("dblclick", () => this.resetZoom());
    this.ro = fitWidth(this.u, this.node);
    this.keepZoom();
    this.updateCount();
    this.showReadout(this.u);
  }

  /** A drag selected an x range (uPlot magnifies it next): remember it and ask for its series. */
  selected(u) {
    if (!(u.select.width > 0)) return;
    const a = u.posToVal(u.select.left, "x");
    const b = u.posToVal(u.select.left + u.select.width, "x");
    if (!Number.isFinite(a) || !Number.isFinite(b)) return;
    this.zoomed = true;
    this.zoomRange = { min: Math.min(a, b), max: Math.max(a, b) };
    this.zoomNote = this.onZoom ? "loading the range…" : "";
    if (this.onZoom) this.onZoom({ ...this.zoomRange });
    this.updateCount();
  }

  /** While zoomed, the x scale stays on the zoomed range (the y scale follows the data in it). */
  keepZoom() {
    if (this.zoomed && this.zoomRange && this.u) this.u.setScale("x", { min: this.zoomRange.min, max: this.zoomRange.max });
  }

  /** data-view and data-points of the chart's node (see the class comment). */
  updateCount() {
    const r = this.zoomed ? this.zoomRange : null;
    let n = 0;
    for (const run of this.zoomRuns || this.runs) {
      if (!r) { n += run.x.length; continue; }
      for (const x of run.x) if (x >= r.min && x <= r.max) n++;
    }
    this.points = n;
    this.node.dataset.points = String(n);
    this.node.dataset.view = this.zoomRuns ? "range" : this.zoomed ? "zoomed" : "full";
    if (r) Object.assign(this.node.dataset, { xMin: String(r.min), xMax: String(r.max) });
    else { delete this.node.dataset.xMin; delete this.node.dataset.xMax; }
  }

  showReadout(u) {
    clear(this.readout);
    const i = u.cursor.idx;
    // (an index left from data that was just replaced by a shorter series counts as no cursor)
    if (i === null || i === undefined || i >= u.data[0].length) {
      if (this.zoomed) {
        const note = this.zoomNote ? ` · ${this.zoomNote}` : "";
        this.readout.append(el("span", { class: "muted", text: `${this.points} points in view${note} · double-click to reset` }));
        return;
      }
      const n = this.runs.reduce((a, r) => a + r.x.length, 0);
      this.readout.append(el("span", { class: "muted", text: `${n} points · drag to zoom, double-click to reset` }));
      return;
    }
    const x = u.data[0][i];
    const xText = this.xMode === "time" ? new Date(x * 1000).toLocaleString() : `step ${fmtNum(x)}`;
    this.readout.append(el("span", { class: "muted", text: xText }));
    for (let s = 1; s < u.series.length; s++) {
      const ser = u.series[s];
      if (ser.label === "min" || ser.label === "max" || ser.label.endsWith("(raw)")) continue;
      const v = u.data[s][i];
      const sw = el("span", { class: "swatch" });
      sw.style.background = ser.stroke();
      this.readout.append(el("span", { class: "val" }, sw, `${ser.label} ${v === null || v === undefined ? "–" : fmtNum(v)}`));
    }
  }
}

// --- panel figures ------------------------------------------------------------------------------

function drawBands(fig, colors) {
  return (u) => {
    const ctx = u.ctx;
    const { top, height } = u.bbox;
    ctx.save();
    for (const b of fig.bands) {
      const x0 = u.valToPos(b.start, "x", true);
      const x1 = u.valToPos(b.end, "x", true);
      ctx.fillStyle = alpha(b.color || colors(b.label), 0.16);
      ctx.fillRect(x0, top, Math.max(1, x1 - x0), height);
    }
    ctx.restore();
  };
}

function bandColor() {
  const known = { FULL: "#3b82f6", PREDICT: "#f59e0b", CORRECT: "#10b981" };
  const extra = ["#8b5cf6", "#ec4899", "#14b8a6", "#ef4444"];
  const seen = {};
  return (label) => known[label] || (seen[label] ||= extra[Object.keys(seen).length % extra.length]);
}

/** A panel LineChart spec drawn with uPlot: several series (each its own x), shaded bands, log axes. */
export function lineFigure(node, fig, palette) {
  const tables = fig.series.map((s) => {
    let y = s.y;
    if (fig.log_y) y = positive(y);
    return sortedByX([s.x, y]);
  });
  const data = tables.length === 1 ? tables[0] : tables.length ? uPlot.join(tables) : [[]];
  const t = theme();
  const colors = bandColor();
  const series = [{}].concat(fig.series.map((s, i) => ({
    label: s.name, stroke: s.color || palette(i), width: 1.5, spanGaps: tables.length > 1,
    dash: s.kind === "dashed" ? [6, 4] : undefined,
    paths: s.kind === "points" ? () => null : undefined,
    points: { show: s.kind === "points" || s.x.length < 30, size: 5, fill: s.color || palette(i) },
  })));
  const legend = el("div", { class: "legend" });
  fig.series.forEach((s, i) => {
    const sw = el("span", { class: "swatch" });
    sw.style.background = s.color || palette(i);
    legend.append(el("span", { class: "val" }, sw, s.name));
  });
  const seenBands = new Set();
  for (const b of fig.bands) {
    if (seenBands.has(b.label)) continue;
    seenBands.add(b.label);
    const sw = el("span", { class: "swatch band" });
    sw.style.background = alpha(b.color || colors(b.label), 0.35);
    legend.append(el("span", { class: "val" }, sw, b.label));
  }
  const plot = el("div", { class: "plot" });
  const readout = el("div", { class: "readout" });
  node.append(plot, legend, readout);
  const u = new uPlot({
    width: Math.max(120, node.clientWidth || 400), height: HEIGHT,
    scales: { x: { time: false, distr: fig.log_x ? 3 : 1 }, y: { distr: fig.log_y ? 3 : 1 } },
    axes: axes(t, false, fig.x_label, fig.y_label),
    series, legend: { show: false },
    cursor: { drag: { x: true, y: false } },
    hooks: {
      drawAxes: [drawBands(fig, colors)],
      setCursor: [(u) => {
        clear(readout);
        const i = u.cursor.idx;
        if (i === null || i === undefined) return;
        const x = u.data[0][i];
        const band = fig.bands.find((b) => x >= b.start && x <= b.end);
        readout.append(el("span", { class: "muted", text: `${fig.x_label || "x"} ${fmtNum(x)}${band ? ` · ${band.label}` : ""}` }));
        for (let s = 1; s < u.series.length; s++) {
          const v = u.data[s][i];
          if (v === null || v === undefined) continue;
          readout.append(el("span", { class: "val", text: `${u.series[s].label} ${fmtNum(v)}` }));
        }
      }],
    },
  }, data, plot);
  fitWidth(u, node);
  return u;
}

// Viridis, 9 stops.
const VIRIDIS = [[68, 1, 84], [71, 44, 122], [59, 81, 139], [44, 113, 142], [33, 144, 141], [39, 173, 129],
  [92, 200, 99], [170, 220, 50], [253, 231, 37]];
function viridis(t) {
  t = Math.min(1, Math.max(0, t));
  const p = t * (VIRIDIS.length - 1);
  const i = Math.min(VIRIDIS.length - 2, Math.floor(p));
  const f = p - i;
  const c = VIRIDIS[i].map((a, k) => Math.round(a + (VIRIDIS[i + 1][k] - a) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

function hidpi(canvas, w, h) {
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(w * dpr);
  canvas.height = Math.round(h * dpr);
  canvas.style.width = `${w}px`;
  canvas.style.height = `${h}px`;
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return ctx;
}

function labelText(v) { return typeof v === "number" ? fmtNum(v, 3) : String(v); }

/** A panel Heatmap spec on a canvas: viridis colours, marked cells outlined with a cross, hover readout. */
export function heatmapFigure(node, fig) {
  const rows = fig.z.length, cols = rows ? fig.z[0].length : 0;
  const vals = fig.z.flat().filter((v) => v !== null && (!fig.log || v > 0));
  const tr = (v) => (fig.log ? Math.log10(v) : v);
  let lo = fig.vmin ?? (vals.length ? Math.min(...vals) : 0);
  let hi = fig.vmax ?? (vals.length ? Math.max(...vals) : 1);
  if (fig.log) { lo = tr(Math.max(lo, 1e-300)); hi = tr(Math.max(hi, 1e-300)); }
  const span = hi - lo || 1;
  const canvas = el("canvas", { class: "heatmap" });
  const readout = el("div", { class: "readout" });
  const marks = new Set(fig.marked.map(([r, c]) => `${r},${c}`));
  const legend = el("div", { class: "legend" });
  const bar = el("span", { class: "colorbar" });
  legend.append(el("span", { class: "val", text: labelText(fig.log ? 10 ** lo : lo) }), bar,
    el("span", { class: "val", text: labelText(fig.log ? 10 ** hi : hi) }));
  if (fig.marked.length) legend.append(el("span", { class: "val mark-key", text: `✕ ${fig.mark_label || "marked"} (${fig.marked.length})` }));
  node.append(canvas, legend, readout);
  const pad = { l: 64, r: 8, t: 6, b: 30 };
  let geom = null;
  const draw = () => {
    const t = theme();
    const w = Math.max(160, node.clientWidth);
    const cellH = Math.max(6, Math.min(28, Math.floor(260 / Math.max(1, rows))));
    const h = pad.t + pad.b + cellH * rows;
    const ctx = hidpi(canvas, w, h);
    const cw = (w - pad.l - pad.r) / Math.max(1, cols);
    geom = { cw, cellH };
    ctx.clearRect(0, 0, w, h);
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        const v = fig.z[r][c];
        const x = pad.l + c * cw, y = pad.t + r * cellH;
        if (v === null || (fig.log && v <= 0)) { ctx.fillStyle = t.grid; ctx.fillRect(x, y, cw, cellH); continue; }
        ctx.fillStyle = viridis((tr(v) - lo) / span);
        ctx.fillRect(x, y, Math.ceil(cw), Math.ceil(cellH));
      }
    }
    ctx.lineWidth = Math.max(1.5, Math.min(cw, cellH) / 8);
    ctx.strokeStyle = "#ff3b30";
    for (const key of marks) {
      const [r, c] = key.split(",").map(Number);
      const x = pad.l + c * cw, y = pad.t + r * cellH, m = Math.min(cw, cellH) * 0.2;
      ctx.strokeRect(x + 1, y + 1, cw - 2, cellH - 2);
      if (cw < 14 || cellH < 14) {  // a small cell gets a ring that can be seen
        ctx.beginPath();
        ctx.arc(x + cw / 2, y + cellH / 2, 8, 0, 2 * Math.PI);
        ctx.stroke();
      }
      ctx.beginPath();
      ctx.moveTo(x + m, y + m); ctx.lineTo(x + cw - m, y + cellH - m);
      ctx.moveTo(x + cw - m, y + m); ctx.lineTo(x + m, y + cellH - m);
      ctx.stroke();
    }
    ctx.fillStyle = t.muted;
    ctx.font = "11px system-ui, sans-serif";
    ctx.textAlign = "right"; ctx.textBaseline = "middle";
    const yEvery = Math.ceil(15 / cellH);
    for (let r = 0; r < rows; r += yEvery) ctx.fillText(labelText(fig.y[r]), pad.l - 4, pad.t + (r + 0.5) * cellH);
    ctx.textAlign = "center"; ctx.textBaseline = "top";
    const xEvery = Math.ceil(40 / cw);
    for (let c = 0; c < cols; c += xEvery) ctx.fillText(labelText(fig.x[c]), pad.l + (c + 0.5) * cw, pad.t + rows * cellH + 3);
    if (fig.x_label) { ctx.fillText(fig.x_label, pad.l + (w - pad.l - pad.r) / 2, pad.t + rows * cellH + 16); }
    if (fig.y_label) {
      ctx.save(); ctx.translate(9, pad.t + rows * cellH / 2); ctx.rotate(-Math.PI / 2);
      ctx.textBaseline = "middle"; ctx.fillText(fig.y_label, 0, 0); ctx.restore();
    }
  };
  canvas.addEventListener("mousemove", (ev) => {
    if (!geom) return;
    const rect = canvas.getBoundingClientRect();
    const c = Math.floor((ev.clientX - rect.left - pad.l) / geom.cw);
    const r = Math.floor((ev.clientY - rect.top - pad.t) / geom.cellH);
    clear(readout);
    if (r < 0 || c < 0 || r >= rows || c >= cols) return;
    const v = fig.z[r][c];
    readout.append(el("span", { class: "val", text: `${fig.y_label || "row"} ${labelText(fig.y[r])} · ${fig.x_label || "column"} ${labelText(fig.x[c])} · ${v === null ? "–" : fmtNum(v)}${marks.has(`${r},${c}`) ? ` · ${fig.mark_label || "marked"}` : ""}` }));
  });
  draw();
  new ResizeObserver(() => { if (Math.abs(node.clientWidth - parseFloat(canvas.style.width)) > 1) draw(); }).observe(node);
}

/** A panel BarChart spec on a canvas: grouped bars per category, linear or log y axis. */
export function barFigure(node, fig, palette) {
  const canvas = el("canvas", { class: "bars" });
  const legend = el("div", { class: "legend" });
  fig.series.forEach((s, i) => {
    const sw = el("span", { class: "swatch" });
    sw.style.background = s.color || palette(i);
    legend.append(el("span", { class: "val" }, sw, s.name));
  });
  const readout = el("div", { class: "readout" });
  node.append(canvas, legend, readout);
  const all = fig.series.flatMap((s) => s.y).filter((v) => v !== null && (!fig.log_y || v > 0));
  let lo = fig.log_y ? Math.min(...all) : Math.min(0, ...all);
  let hi = Math.max(...all, fig.log_y ? lo * 10 : 0);
  if (!all.length) { lo = fig.log_y ? 1 : 0; hi = fig.log_y ? 10 : 1; }
  const tr = (v) => (fig.log_y ? Math.log10(v) : v);
  const tlo = fig.log_y ? Math.floor(tr(lo)) : lo, thi = fig.log_y ? Math.ceil(tr(hi)) : hi * 1.05 || 1;
  const pad = { l: 60, r: 8, t: 8, b: 44 };
  let geom = null;
  const draw = () => {
    const t = theme();
    const w = Math.max(160, node.clientWidth), h = HEIGHT;
    const ctx = hidpi(canvas, w, h);
    const pw = w - pad.l - pad.r, ph = h - pad.t - pad.b;
    const ypix = (v) => pad.t + ph - ((tr(v) - tlo) / (thi - tlo || 1)) * ph;
    ctx.font = "11px system-ui, sans-serif";
    ctx.strokeStyle = t.grid; ctx.fillStyle = t.muted; ctx.lineWidth = 1;
    ctx.textAlign = "right"; ctx.textBaseline = "middle";
    const ticks = [];
    if (fig.log_y) for (let e = tlo; e <= thi; e++) ticks.push(10 ** e);
    else for (let i = 0; i <= 4; i++) ticks.push(tlo + ((thi - tlo) * i) / 4);
    for (const v of ticks) {
      const y = ypix(v);
      ctx.beginPath(); ctx.moveTo(pad.l, y); ctx.lineTo(w - pad.r, y); ctx.stroke();
      ctx.fillText(fmtNum(v, 3), pad.l - 4, y);
    }
    if (fig.y_label) {
      ctx.save(); ctx.translate(10, pad.t + ph / 2); ctx.rotate(-Math.PI / 2); ctx.textAlign = "center";
      ctx.fillText(fig.y_label, 0, 0); ctx.restore();
    }
    const n = fig.categories.length, k = fig.series.length || 1;
    const gw = pw / Math.max(1, n), bw = Math.max(1, (gw * 0.8) / k);
    geom = { gw, pw };
    const base = fig.log_y ? pad.t + ph : ypix(0);
    fig.series.forEach((s, si) => {
      ctx.fillStyle = s.color || palette(si);
      s.y.forEach((v, ci) => {
        if (v === null || (fig.log_y && v <= 0)) return;
        const x = pad.l + ci * gw + gw * 0.1 + si * bw;
        const y = ypix(v);
        ctx.fillRect(x, Math.min(y, base), Math.max(1, bw - 1), Math.abs(base - y));
      });
    });
    ctx.fillStyle = t.muted; ctx.textAlign = "center"; ctx.textBaseline = "top";
    const every = Math.ceil(60 / gw);
    fig.categories.forEach((c, ci) => {
      if (ci % every) return;
      let text = String(c);
      const max = Math.max(4, Math.floor((gw * every) / 6.5));
      if (text.length > max) text = text.slice(0, max - 1) + "…";
      ctx.fillText(text, pad.l + (ci + 0.5) * gw, pad.t + ph + 4);
    });
  };
  canvas.addEventListener("mousemove", (ev) => {
    if (!geom) return;
    const rect = canvas.getBoundingClientRect();
    const ci = Math.floor((ev.clientX - rect.left - pad.l) / geom.gw);
    clear(readout);
    if (ci < 0 || ci >= fig.categories.length) return;
    readout.append(el("span", { class: "muted", text: String(fig.categories[ci]) }));
    fig.series.forEach((s) => readout.append(el("span", { class: "val", text: `${s.name} ${fmtNum(s.y[ci])}` })));
  });
  draw();
  new ResizeObserver(() => { if (Math.abs(node.clientWidth - parseFloat(canvas.style.width)) > 1) draw(); }).observe(node);
}
