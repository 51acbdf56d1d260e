// Metric charts over uPlot: one run or several overlaid, drawn so that they tell the truth.
//
// - Each point's bucket min and max (y_min, y_max) are drawn as an envelope, one device-pixel column at a
//   time, so a one-step spike in a million-step series stays visible at any zoom.
// - NaN (null) is a gap; nothing is drawn across it.
// - Markers sit only on logged values (a point that stands for a bucket of records draws none), and only
//   when few enough points are in view to tell them apart.
// - Smoothing is off unless asked for; with it on, the raw line stays drawn under the smoothed one.
// - Axes are as wide as their labels; ticks are "nice" and written with fmtTick.
// - A group of runs (a series with `band`) is its line (mean or median), its band (±1 std, min-max or
//   percentiles) filled in the same hue, and its bucket min/max as a fainter envelope; hovering says n and std.

import uPlot from "./vendor/uplot/uPlot.esm.js";
import { el, clear, cssVar, fmtNum, fmtTick, fmtTime, smooth } from "./util.js";

export const HEIGHT = 220;
export const FONT = "11px system-ui, sans-serif";
// At most this many points in view get markers.
const MARKERS_UP_TO = 60;

export function theme() {
  return { fg: cssVar("--fg") || "#222", muted: cssVar("--muted") || "#777", grid: cssVar("--grid") || "#ddd",
    bg: cssVar("--bg") || "#fff" };
}

let measure = null;
/** The width in CSS pixels of `text` in the charts' font. */
export function textWidth(text, font = FONT) {
  measure ||= document.createElement("canvas").getContext("2d");
  measure.font = font;
  return measure.measureText(String(text)).width;
}

/**
 * uPlot axes: x (steps, plain numbers or clock time) and y; each as wide as its widest label.
 * A log axis labels its powers of ten with fmtNum; a linear one its nice ticks with fmtTick.
 */
/** Tick steps of an axis whose values are all whole numbers (bits, steps, counts): never 0.5. */
export const INT_INCRS = [1, 2, 5].concat(...Array.from({ length: 15 }, (_, e) => [10, 20, 25, 50].map((m) => m * 10 ** e)));

/** Whether every value of every list is a whole number (null and undefined aside). */
export function allIntegers(...lists) {
  let any = false;
  for (const list of lists) for (const v of list) {
    if (v === null || v === undefined) continue;
    if (!Number.isInteger(v)) return false;
    any = true;
  }
  return any;
}

export function axes(t, { xTime = false, xLabel = "", yLabel = "", logX = false, logY = false, intX = false, intY = false } = {}) {
  const common = { stroke: t.muted, grid: { stroke: t.grid, width: 1 }, ticks: { stroke: t.grid, width: 1, size: 5 },
    font: FONT, labelFont: FONT, gap: 4 };
  const numbers = (log) => (u, splits, ax, space, incr) => splits.map((v) => (v === null || v === undefined ? ""
    : log ? fmtNum(v, 3) : fmtTick(v, incr)));
  // A time axis: the time of day under each tick, and the date ("2025-03-14", the CLI's format) on a
  // second line under the first tick and wherever the day changes; the axis is tall enough for both.
  const x = { ...common, label: xLabel || undefined, labelSize: xLabel ? 16 : 0, space: xTime ? 80 : 64,
    size: xTime ? TIME_AXIS_SIZE : 30 };
  x.values = xTime ? timeTicks : numbers(logX);
  if (intX && !xTime && !logX) x.incrs = INT_INCRS;
  const y = { ...common, label: yLabel || undefined, labelSize: yLabel ? 16 : 0, space: 28, values: numbers(logY),
    size: (u, values) => {
      if (!values) return 40;
      const w = values.reduce((m, v) => Math.max(m, v ? textWidth(v) : 0), 0);
      return Math.ceil(w) + 5 + 4 + 6;  // ticks, gap, margin
    } };
  if (intY && !logY) y.incrs = INT_INCRS;
  return [x, y];
}

/** The height of a time axis: ticks, two lines of labels and the gap. */
export const TIME_AXIS_SIZE = 44;

/**
 * Labels of a clock-time axis (epoch seconds): "09:26:53" (or "09:26" when the ticks are whole minutes),
 * with "\n2025-03-14" under the first label and under each one on a new day.
 */
export function timeTicks(u, splits, ax, space, incr) {
  const withSeconds = !(incr >= 60) || splits.some((v) => v !== null && Math.round(v) % 60 !== 0);
  // Ticks less than a second apart (a short run) show the fraction they differ by: "09:26:53.250".
  let decimals = 0;
  if (incr > 0 && incr < 1) while (decimals < 3 && Math.abs(Math.round(incr * 10 ** decimals) - incr * 10 ** decimals) > 1e-6) decimals++;
  let lastDay = null;
  return splits.map((v) => {
    if (v === null || v === undefined || !Number.isFinite(v)) return "";
    const whole = Math.floor(v);
    const text = fmtTime(whole);  // "2025-03-14 09:26:53"
    const frac = decimals ? (v - whole).toFixed(decimals).slice(1) : "";
    const day = text.slice(0, 10), clock = withSeconds ? text.slice(11) + frac : text.slice(11, 16);
    const out = day !== lastDay ? `${clock}\n${day}` : clock;
    lastDay = day;
    return out;
  });
}

/** Sort (x, ...ys) by x when x goes back (repeated or out-of-order steps); stable. */
export function sortedByX(cols) {
  const x = cols[0];
  let asc = true;
  for (let i = 1; i < x.length; i++) if (x[i] < x[i - 1]) { asc = false; break; }
  if (asc) return cols;
  const idx = x.map((_, i) => i).sort((a, b) => x[a] - x[b] || a - b);
  return cols.map((c) => idx.map((i) => c[i]));
}

export function positive(ys) { return ys.map((v) => (v === null || v === undefined || v > 0 ? v : null)); }

export function alpha(color, a) {
  if (color.startsWith("hsl(")) return color.replace(")", ` / ${a})`);
  if (color.startsWith("#") && color.length === 7) return color + Math.round(a * 255).toString(16).padStart(2, "0");
  return color;
}

/** Keep a uPlot chart as wide as its container. */
export function fitWidth(u, node) {
  const ro = new ResizeObserver(() => {
    const w = Math.max(120, Math.floor(node.clientWidth));
    if (Math.abs(w - u.width) > 1) u.setSize({ width: w, height: u.height });
  });
  ro.observe(node);
  return ro;
}

/**
 * Draw each envelope (a run's bucket min..max) under the lines: per device-pixel column, one bar from the
 * smallest min to the largest max of the buckets that fall in it, at least one device pixel tall.
 */
function drawEnvelopes(chart) {
  return (u) => {
    const envs = chart.envelopes || [];
    if (!envs.length) return;
    const ctx = u.ctx;
    const { left, top, width, height } = u.bbox;
    const xs = u.data[0];
    const xmin = u.scales.x.min, xmax = u.scales.x.max;
    const px = Math.max(1, Math.round(devicePixelRatio || 1));
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    for (const env of envs) {
      const lo = u.data[env.lo], hi = u.data[env.hi];
      const cols = new Map();
      for (let i = 0; i < xs.length; i++) {
        const x = xs[i], a = lo[i], b = hi[i];
        if (x < xmin || x > xmax || a === null || a === undefined || b === null || b === undefined || a === b) continue;
        const c = Math.floor(u.valToPos(x, "x", true) / px) * px;
        const y0 = u.valToPos(b, "y", true), y1 = u.valToPos(a, "y", true);
        const have = cols.get(c);
        if (have) { if (y0 < have[0]) have[0] = y0; if (y1 > have[1]) have[1] = y1; } else cols.set(c, [y0, y1]);
      }
      ctx.fillStyle = alpha(env.color, env.alpha);
      for (const [c, [y0, y1]] of cols) ctx.fillRect(c, Math.floor(y0), px, Math.max(px, Math.ceil(y1) - Math.floor(y0)));
    }
    ctx.restore();
  };
}

/** Fill each group's band (lo..hi) under the lines, one polygon per stretch without a gap. */
function drawBands(chart) {
  return (u) => {
    const bands = chart.bands || [];
    if (!bands.length) return;
    const ctx = u.ctx;
    const { left, top, width, height } = u.bbox;
    const xs = u.data[0];
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    for (const b of bands) {
      const lo = u.data[b.lo], hi = u.data[b.hi];
      ctx.fillStyle = alpha(b.color, 0.2);
      let run = [];
      const flush = () => {
        if (run.length > 1) {
          ctx.beginPath();
          run.forEach(([x, y], k) => (k ? ctx.lineTo(x, y) : ctx.moveTo(x, y)));
          for (let k = run.length - 1; k >= 0; k--) ctx.lineTo(run[k][0], run[k][2]);
          ctx.closePath();
          ctx.fill();
        }
        run = [];
      };
      for (let i = 0; i < xs.length; i++) {
        const a = lo[i], c = hi[i];
        if (a === undefined && c === undefined) continue;  // a point of another series (uPlot.join)
        if (a === null || c === null) { flush(); continue; }
        run.push([u.valToPos(xs[i], "x", true), u.valToPos(c, "y", true), u.valToPos(a, "y", true)]);
      }
      flush();
    }
    ctx.restore();
  };
}

/**
 * A metric chart: one run or several overlaid.
 * runs: [{id, label, color, x: [], y: [], y_min: [], y_max: []}]; a group also has band: {lo: [], hi: []},
 * count: [] (runs at each x) and std: [], and `stat` ("mean" or "median") naming its line.
 *
 * Zoom: dragging over the chart magnifies the x range at once and calls onZoom({min, max}) (in the
 * unit of x); the page fetches that range from the server at full resolution and hands it to
 * setZoomRuns(). Until a double-click (which calls onZoom(null)), the range's series is drawn and
 * setRuns() only keeps the whole series (live appends) for when the zoom is reset. `zoom` (a {min, max})
 * opens the chart zoomed (a zoom from the URL).
 * The chart's node carries data-view ("full", "zoomed": magnified, "range": the range's series drawn),
 * data-points (points drawn within the x range in view), data-markers (markers drawn) and, while zoomed,
 * data-x-min and data-x-max.
 */
export class MetricChart {
  constructor(node, { title, xMode = "step", log = false, smoothing = 0, height = HEIGHT, onZoom = null, zoom = null,
    statLabels = false } = {}) {
    this.node = node;
    this.title = title;
    this.xMode = xMode;
    this.log = log;
    this.smoothing = smoothing;
    this.height = height;
    this.onZoom = onZoom;
    this.statLabels = statLabels;
    this.runs = [];
    this.zoomed = !!zoom;
    this.zoomRange = zoom ? { ...zoom } : null;
    this.zoomRuns = null;
    this.zoomNote = "";
    this.u = null;
    this.envelopes = [];
    this.readout = el("div", { class: "readout" });
    this.plotNode = el("div", { class: "plot" });
    clear(node);
    node.append(this.plotNode, this.readout);
    if (zoom && onZoom) queueMicrotask(() => onZoom({ ...zoom }));
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
    if (redraw) { this.destroy(); this.render(); }
  }

  setOptions(opts) {
    const xChanged = "xMode" in opts && opts.xMode !== this.xMode;
    const rebuild = ("log" in opts && opts.log !== this.log) || xChanged
      || ("smoothing" in opts && (opts.smoothing > 0) !== (this.smoothing > 0));
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

  /** uPlot's data and series: per run its min and max (invisible, for the y range and the envelope), raw line, smoothed line. */
  data() {
    const shown = this.zoomRuns || this.runs;
    const tables = [];
    const series = [{}];
    const envelopes = [];
    const bands = [];
    this.rawOf = {};
    let col = 1;
    for (const r of shown) {
      let ys = r.y.slice();
      let lo = (r.y_min || r.y).slice();
      let hi = (r.y_max || r.y).slice();
      if (this.log) { ys = positive(ys); lo = positive(lo); hi = positive(hi); }
      const cols = [r.x.slice(), lo, hi];
      const hidden = { stroke: "transparent", width: 0, paths: () => null, points: { show: false } };
      series.push({ ...hidden, label: `${r.label} min`, role: "min" }, { ...hidden, label: `${r.label} max`, role: "max" });
      envelopes.push({ lo: col, hi: col + 1, color: r.color, alpha: r.band ? 0.1 : shown.length > 1 ? 0.3 : 0.45 });
      let group = null;
      if (r.band) {
        // The band on the y scale (it counts for the range); n and std on a scale of their own, never drawn.
        const bl = this.log ? positive(r.band.lo) : r.band.lo.slice(), bh = this.log ? positive(r.band.hi) : r.band.hi.slice();
        cols.push(bl, bh, r.count.slice(), r.std.slice());
        series.push({ ...hidden, label: `${r.label} band low`, role: "band" }, { ...hidden, label: `${r.label} band high`, role: "band" },
          { ...hidden, label: `${r.label} n`, role: "aux", scale: "aux" }, { ...hidden, label: `${r.label} std`, role: "aux", scale: "aux" });
        bands.push({ lo: col + 2, hi: col + 3, color: r.color });
        group = { count: col + 4, std: col + 5, stat: r.stat || "mean" };
        col += 4;
      }
      const raw = col + 2;
      this.rawOf[raw] = { lo: col - (group ? 4 : 0), hi: col + 1 - (group ? 4 : 0), group };
      const markers = { show: false, size: 5, fill: r.color, filter: (u, si) => this.markers(u, si) };
      if (this.smoothing > 0) {
        cols.push(ys, smooth(ys, this.smoothing));
        series.push({ label: r.label, role: "raw", stroke: alpha(r.color, 0.35), width: 1, points: markers },
          { label: `${r.label} (smoothed)`, role: "smoothed", stroke: r.color, width: 2, points: { show: false } });
        col += 4;
      } else {
        cols.push(ys);
        series.push({ label: r.label, role: "raw", stroke: r.color, width: r.band ? 2 : 1.5, points: markers });
        col += 3;
      }
      tables.push(sortedByX(cols));
    }
    this.envelopes = envelopes;
    this.bands = bands;
    this.node.dataset.bands = String(bands.length);
    let data;
    if (tables.length === 1) data = tables[0];
    else if (tables.length === 0) data = [[]];
    else data = uPlot.join(tables);
    return { data, series };
  }

  /** Indices of the logged values in view of raw series `si`, when few enough to mark; else null. */
  markers(u, si) {
    const env = this.rawOf[si];
    if (!env || env.group) return null;  // a group's line stands for several runs: no point is one logged value
    const xs = u.data[0], ys = u.data[si], lo = u.data[env.lo], hi = u.data[env.hi];
    const xmin = u.scales.x.min, xmax = u.scales.x.max;
    const out = [];
    let inView = 0;
    for (let i = 0; i < xs.length; i++) {
      if (xs[i] < xmin || xs[i] > xmax || ys[i] === null || ys[i] === undefined) continue;
      if (++inView > MARKERS_UP_TO) { this.markerCount = 0; this.node.dataset.markers = "0"; return null; }
      if (lo[i] === hi[i]) out.push(i);  // a logged value, not a bucket
    }
    this.markerCount = out.length;
    this.node.dataset.markers = String(out.length);
    return out.length ? out : null;
  }

  /** A metric logged once per run reads better as its value than as a chart of one point. */
  renderStat() {
    this.destroy();
    this.isStat = true;
    clear(this.plotNode);
    clear(this.readout);
    const labelled = this.statLabels || this.runs.length > 1;
    for (const r of this.runs) {
      const i = r.x.length - 1;
      const where = i < 0 ? "not logged" : this.xMode === "time" ? fmtTime(r.x[i]) : `${this.xName || "step"} ${fmtNum(r.x[i])}`;
      const row = el("div", { class: "stat" });
      if (labelled) {
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
    const { data, series } = this.data();
    // The same series (labels, colours) take new data in place; others (another grouping, other colours) a new plot,
    // since uPlot keeps each series' stroke from when it was made.
    const look = JSON.stringify(series.map((s) => [s.label, typeof s.stroke === "string" ? s.stroke : null, s.width ?? null]));
    if (this.u && this.u.series.length === series.length && this.look === look) {
      this.u.setData(data, !this.zoomed);
      this.keepZoom();
      this.updateCount();
      this.showReadout(this.u);
      return;
    }
    this.destroy();
    this.look = look;
    const t = theme();
    const xTime = this.xMode === "time";
    const width = Math.max(120, this.node.clientWidth || 400);
    const opts = {
      width, height: this.height,
      scales: { x: { time: xTime }, y: { distr: this.log ? 3 : 1 }, aux: { auto: true } },
      axes: axes(t, { xTime, logY: this.log, intX: !xTime && allIntegers(...this.runs.map((r) => r.x)) }),
      series,
      legend: { show: false },
      cursor: { drag: { x: true, y: false, setScale: true }, points: { show: false } },
      hooks: {
        drawAxes: [drawEnvelopes(this), drawBands(this)],
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

  /** "300 points", or for several runs "2 runs × 300 points" / "2 runs: 300 + 250 points". */
  pointsText() {
    const counts = this.runs.map((r) => r.x.length);
    const what = this.runs.length && this.runs.every((r) => r.band) ? "groups" : "runs";
    if (counts.length <= 1) return `${fmtNum(counts[0] || 0)} points`;
    if (counts.every((c) => c === counts[0])) return `${counts.length} ${what} × ${fmtNum(counts[0])} points`;
    return `${counts.length} ${what}: ${counts.map((c) => fmtNum(c)).join(" + ")} points`;
  }

  showReadout(u) {
    clear(this.readout);
    const i = u.cursor.idx;
    // (an index left from data that was just replaced by a shorter series counts as no cursor)
    if (i === null || i === undefined || i >= u.data[0].length) {
      if (this.zoomed) {
        const note = this.zoomNote ? ` · ${this.zoomNote}` : "";
        this.readout.append(el("span", { class: "muted", text: `${fmtNum(this.points)} points in view${note} · double-click to reset` }));
        return;
      }
      this.readout.append(el("span", { class: "muted", text: `${this.pointsText()} · drag to zoom, double-click to reset` }));
      return;
    }
    const x = u.data[0][i];
    this.readout.append(el("span", { class: "muted", text: this.xMode === "time" ? fmtTime(x) : `${this.xName || "step"} ${fmtNum(x)}` }));
    for (let s = 1; s < u.series.length; s++) {
      const ser = u.series[s];
      if (ser.role !== "raw") continue;
      const v = u.data[s][i];
      const env = this.rawOf[s];
      const lo = u.data[env.lo][i], hi = u.data[env.hi][i];
      let text = v === null || v === undefined ? "–" : fmtNum(v);
      if (env.group) {
        const n = u.data[env.group.count][i], sd = u.data[env.group.std][i];
        if (v !== null && v !== undefined) text = `${env.group.stat} ${fmtNum(v)} ± ${fmtNum(sd)} std · n ${fmtNum(n)}`;
        if (lo !== hi && lo !== null && lo !== undefined) text += ` (min ${fmtNum(lo)}, max ${fmtNum(hi)})`;
      } else if (lo !== hi && lo !== null && lo !== undefined) text += ` (mean; min ${fmtNum(lo)}, max ${fmtNum(hi)})`;
      if (this.smoothing > 0 && u.data[s + 1][i] !== null && u.data[s + 1][i] !== undefined) text += ` · smoothed ${fmtNum(u.data[s + 1][i])}`;
      const sw = el("span", { class: "swatch" });
      sw.style.background = this.envelopes.find((e) => e.lo === env.lo).color;
      this.readout.append(el("span", { class: "val" }, sw, `${ser.label} ${text}`));
    }
  }
}
