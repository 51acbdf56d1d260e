// Panel figures (tracker.LineChart, Heatmap, BarChart): uPlot for lines, a canvas for heatmaps and bars.
// The same axes, tick steps and number formatter as the metric charts (chart.js, util.js).

import uPlot from "./vendor/uplot/uPlot.esm.js";
import { HEIGHT, FONT, allIntegers, alpha, axes, fitWidth, positive, sortedByX, textWidth, theme } from "./chart.js";
import { append, el, clear, fmtNum, fmtTick, fmtTime, niceTicks } from "./util.js";

/** The narrowest a phase band is drawn, in CSS pixels (wider than a grid line, so it reads as a band). */
export const BAND_MIN_PX = 5;
/** A band narrower than this (CSS pixels) is drawn in a stronger tint: a faint sliver reads as a grid line. */
export const BAND_STRONG_BELOW_PX = 12;

function drawBands(fig, colors) {
  return (u) => {
    const ctx = u.ctx;
    const { top, height } = u.bbox;
    // A band of one step would be a faint sliver like a grid line: every band is at least BAND_MIN_PX
    // CSS pixels wide (centred on its steps), and one narrower than BAND_STRONG_BELOW_PX is tinted stronger.
    const minW = BAND_MIN_PX * (devicePixelRatio || 1);
    ctx.save();
    const boxes = fig.bands.map((b) => {
      let x0 = u.valToPos(b.start, "x", true);
      let x1 = u.valToPos(b.end, "x", true);
      const narrow = x1 - x0 < BAND_STRONG_BELOW_PX * (devicePixelRatio || 1);
      if (x1 - x0 < minW) { const mid = (x0 + x1) / 2; x0 = mid - minW / 2; x1 = mid + minW / 2; }
      return { b, x0, x1, narrow };
    });
    // Wide bands first, narrow ones over them (a one-step band overlaps its neighbours' edges).
    for (const { b, x0, x1, narrow } of boxes.filter((x) => !x.narrow).concat(boxes.filter((x) => x.narrow))) {
      if (narrow) ctx.clearRect(x0, top, x1 - x0, height);
      ctx.fillStyle = alpha(b.color || colors(b.label), narrow ? 0.55 : 0.16);
      ctx.fillRect(x0, top, x1 - x0, height);
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

/** A panel LineChart spec drawn with uPlot: several series (each its own x), shaded bands, log axes, clock time. */
export function lineFigure(node, fig, palette) {
  const tables = fig.series.map((s) => sortedByX([s.x, fig.log_y ? positive(s.y) : s.y]));
  const data = tables.length === 1 ? tables[0] : tables.length ? uPlot.join(tables) : [[]];
  const t = theme();
  const colors = bandColor();
  const series = [{}].concat(fig.series.map((s, i) => ({
    label: s.name, stroke: s.color || palette(i), width: 1.5,
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
  const xScale = { time: !!fig.x_time, distr: fig.log_x ? 3 : 1 };
  if (fig.x_range) xScale.range = () => fig.x_range;
  const xText = (x) => (fig.x_time ? fmtTime(x) : `${fig.x_label || "x"} ${fmtNum(x)}`);
  const u = new uPlot({
    width: Math.max(120, node.clientWidth || 400), height: HEIGHT,
    scales: { x: xScale, y: { distr: fig.log_y ? 3 : 1 } },
    axes: axes(t, { xTime: !!fig.x_time, xLabel: fig.x_label, yLabel: fig.y_label, logX: fig.log_x, logY: fig.log_y,
      intX: allIntegers(...fig.series.map((s) => s.x)), intY: allIntegers(...fig.series.map((s) => s.y)) }),
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
        readout.append(el("span", { class: "muted", text: `${xText(x)}${band ? ` · ${band.label}` : ""}` }));
        for (let s = 1; s < u.series.length; s++) {
          const v = u.data[s][i];
          if (v === null || v === undefined) continue;
          readout.append(el("span", { class: "val", text: `${u.series[s].label} ${fmtNum(v)}${fig.y_label ? ` ${fig.y_label}` : ""}` }));
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

/** A 2D context drawing in CSS pixels on a canvas sized for the screen's pixel ratio. */
export function hidpi(canvas, w, h) {
  const dpr = window.devicePixelRatio || 1;
  canvas.width = Math.round(w * dpr);
  canvas.height = Math.round(h * dpr);
  canvas.style.width = `${w}px`;
  canvas.style.height = `${h}px`;
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return ctx;
}

/** Labels of one axis written alike: numbers with the decimals their spacing needs, text as text. */
function labeller(values) {
  const nums = values.filter((v) => typeof v === "number" && Number.isFinite(v));
  if (nums.length !== values.length || nums.length < 2) return (v) => (typeof v === "number" ? fmtNum(v, 3) : String(v));
  const steps = nums.slice(1).map((v, i) => Math.abs(v - nums[i])).filter((d) => d > 0).sort((a, b) => a - b);
  const step = steps.length ? steps[Math.floor(steps.length / 2)] : 1;
  const nice = niceTicks(0, step, 1).step;
  return (v) => fmtTick(v, Math.min(step, nice));
}

/** A panel Heatmap spec on a canvas: viridis colours, a labelled colour scale, marks, hover readout. */
export function heatmapFigure(node, fig) {
  const rows = fig.z.length, cols = rows ? fig.z[0].length : 0;
  const lower = fig.origin === "lower";
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
  if (fig.marked.length) legend.append(el("span", { class: "val mark-key", text: `✕ ${fig.mark_label || "marked"} (${fig.marked.length})` }));
  node.append(canvas, legend, readout);
  const xText = labeller(fig.x), yText = labeller(fig.y);
  const rowOf = (r) => (lower ? rows - 1 - r : r);  // the screen row of data row r
  // The colour scale: a bar on the right with nice ticks of the values and the value label.
  const scaleTicks = fig.log
    ? Array.from({ length: Math.floor(hi) - Math.ceil(lo) + 1 }, (_, k) => Math.ceil(lo) + k)
    : niceTicks(lo, hi, 4).ticks.filter((v) => v >= lo - 1e-12 && v <= hi + 1e-12);
  const scaleStep = fig.log ? 1 : niceTicks(lo, hi, 4).step;
  const scaleText = (v) => (fig.log ? fmtNum(10 ** v, 3) : fmtTick(v, scaleStep));
  const scaleW = 14 + 6 + Math.ceil(Math.max(0, ...scaleTicks.map((v) => textWidth(scaleText(v))))) + (fig.value_label ? 16 : 0);
  const yw = Math.ceil(Math.max(0, ...fig.y.map((v) => textWidth(yText(v)))));
  const pad = { l: yw + 8 + (fig.y_label ? 16 : 0), r: scaleW + 12, t: 6, b: 18 + (fig.x_label ? 16 : 0) };
  let geom = null;
  const draw = () => {
    const t = theme();
    const cellH = fig.cell_aspect > 0 ? Math.max(4, Math.min(40, Math.floor(300 / Math.max(1, rows))))
      : Math.max(4, Math.min(28, Math.floor(260 / Math.max(1, rows))));
    // A figure with cell_aspect draws cells at most that many times as wide as tall: a loss landscape is
    // not squashed to 5:1 across a wide card (the canvas is then narrower than the card).
    const avail = Math.max(200, node.clientWidth);
    const aspect = fig.cell_aspect > 0 ? fig.cell_aspect : Infinity;  // the figure's own cap (a landscape: 1)
    const pw0 = Math.min(avail - pad.l - pad.r, Math.max(1, cols) * cellH * aspect);
    const w = Math.max(200, Math.round(pad.l + pw0 + pad.r));
    const ph = cellH * rows;
    const h = pad.t + pad.b + ph;
    const ctx = hidpi(canvas, w, h);
    const cw = (w - pad.l - pad.r) / Math.max(1, cols);
    geom = { cw, cellH };
    ctx.clearRect(0, 0, w, h);
    for (let r = 0; r < rows; r++) {
      const y = pad.t + rowOf(r) * cellH;
      for (let c = 0; c < cols; c++) {
        const v = fig.z[r][c];
        const x = pad.l + c * cw;
        if (v === null || (fig.log && v <= 0)) { ctx.fillStyle = t.grid; ctx.fillRect(x, y, cw, cellH); continue; }
        ctx.fillStyle = viridis((tr(v) - lo) / span);
        ctx.fillRect(x, y, Math.ceil(cw), Math.ceil(cellH));
      }
    }
    ctx.lineWidth = Math.max(1.5, Math.min(cw, cellH) / 8);
    ctx.strokeStyle = "#ff3b30";
    for (const key of marks) {
      const [r, c] = key.split(",").map(Number);
      const x = pad.l + c * cw, y = pad.t + rowOf(r) * cellH, m = Math.min(cw, cellH) * 0.2;
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
    ctx.font = FONT;
    ctx.textAlign = "right"; ctx.textBaseline = "middle";
    const yEvery = Math.ceil(14 / cellH);
    for (let r = 0; r < rows; r += yEvery) ctx.fillText(yText(fig.y[r]), pad.l - 4, pad.t + (rowOf(r) + 0.5) * cellH);
    ctx.textAlign = "center"; ctx.textBaseline = "top";
    const xw = Math.max(30, ...fig.x.map((v) => textWidth(xText(v)))) + 10;
    const xEvery = Math.ceil(xw / cw);
    for (let c = 0; c < cols; c += xEvery) ctx.fillText(xText(fig.x[c]), pad.l + (c + 0.5) * cw, pad.t + ph + 3);
    if (fig.x_label) ctx.fillText(fig.x_label, pad.l + (w - pad.l - pad.r) / 2, pad.t + ph + 18);
    if (fig.y_label) {
      ctx.save(); ctx.translate(8, pad.t + ph / 2); ctx.rotate(-Math.PI / 2);
      ctx.textBaseline = "middle"; ctx.fillText(fig.y_label, 0, 0); ctx.restore();
    }
    // colour scale: larger values up
    const sx = w - pad.r + 12;
    for (let k = 0; k < ph; k++) { ctx.fillStyle = viridis(1 - k / Math.max(1, ph - 1)); ctx.fillRect(sx, pad.t + k, 14, 1); }
    ctx.fillStyle = t.muted; ctx.textAlign = "left"; ctx.textBaseline = "middle";
    for (const v of scaleTicks) {
      const y = pad.t + ph - ((v - lo) / span) * ph;
      ctx.fillRect(sx + 14, y, 3, 1);
      ctx.fillText(scaleText(v), sx + 20, Math.min(pad.t + ph - 5, Math.max(pad.t + 5, y)));
    }
    if (fig.value_label) {
      ctx.save(); ctx.translate(w - 6, pad.t + ph / 2); ctx.rotate(Math.PI / 2); ctx.textAlign = "center";
      ctx.fillText(fig.value_label, 0, 0); ctx.restore();
    }
  };
  canvas.addEventListener("mousemove", (ev) => {
    if (!geom) return;
    const rect = canvas.getBoundingClientRect();
    const c = Math.floor((ev.clientX - rect.left - pad.l) / geom.cw);
    const sr = Math.floor((ev.clientY - rect.top - pad.t) / geom.cellH);
    const r = lower ? rows - 1 - sr : sr;
    clear(readout);
    if (sr < 0 || c < 0 || r < 0 || r >= rows || c >= cols) return;
    const v = fig.z[r][c];
    readout.append(el("span", { class: "val", text: `${fig.y_label || "row"} ${yText(fig.y[r])} · ${fig.x_label || "column"} ${xText(fig.x[c])} · ${fig.value_label || "value"} ${v === null ? "–" : fmtNum(v)}${marks.has(`${r},${c}`) ? ` · ${fig.mark_label || "marked"}` : ""}` }));
  });
  draw();
  let drawnFor = node.clientWidth;  // (the canvas may be narrower than the card: compare the card's widths)
  new ResizeObserver(() => { if (Math.abs(node.clientWidth - drawnFor) > 1) { drawnFor = node.clientWidth; draw(); } }).observe(node);
}

/** A panel BarChart spec on a canvas: grouped bars per category, nice ticks, labels slanted when they do not fit. */
export function barFigure(node, fig, palette) {
  const canvas = el("canvas", { class: "bars" });
  const legend = el("div", { class: "legend" });
  fig.series.forEach((s, i) => {
    const sw = el("span", { class: "swatch" });
    sw.style.background = s.color || palette(i);
    legend.append(el("span", { class: "val" }, sw, s.name));
  });
  const readout = el("div", { class: "readout" });
  // (DOM append writes a null as the text "null": only a note that exists is added.)
  append(node, [canvas, legend, fig.note ? el("p", { class: "muted figure-note", text: fig.note }) : null, readout]);
  const all = fig.series.flatMap((s) => s.y).filter((v) => v !== null && (!fig.log_y || v > 0));
  const tr = (v) => (fig.log_y ? Math.log10(v) : v);
  let ticks, tlo, thi, step;
  if (fig.log_y) {
    const a = all.length ? Math.floor(Math.log10(Math.min(...all))) : 0;
    const b = all.length ? Math.ceil(Math.log10(Math.max(...all))) : 1;
    tlo = a; thi = Math.max(b, a + 1);
    ticks = Array.from({ length: thi - tlo + 1 }, (_, k) => 10 ** (tlo + k));
  } else {
    const nt = niceTicks(Math.min(0, ...all), Math.max(0, ...all, all.length ? 0 : 1), 4);
    ticks = nt.ticks; tlo = nt.lo; thi = nt.hi; step = nt.step;
  }
  const tickText = (v) => (fig.log_y ? fmtNum(v, 3) : fmtTick(v, step));
  const labelW = Math.max(...ticks.map((v) => textWidth(tickText(v))));
  const catW = Math.max(0, ...fig.categories.map((c) => textWidth(String(c))));
  let geom = null;
  const draw = () => {
    const t = theme();
    const w = Math.max(200, node.clientWidth);
    let padL = Math.ceil(labelW) + 10 + (fig.y_label ? 16 : 0);
    const gw0 = (w - padL - 8) / Math.max(1, fig.categories.length);
    // Category labels: level when they fit their slot, else slanted at 35° (every one still readable).
    const slant = catW + 6 > gw0;
    const firstW = fig.categories.length ? textWidth(String(fig.categories[0])) * Math.cos(0.61) : 0;
    if (slant) padL = Math.max(padL, Math.ceil(firstW - gw0 / 2 + 4));
    const pad = { l: padL, r: 8, t: 8, b: slant ? Math.min(140, Math.ceil(catW * Math.sin(0.61) + 18)) : 22 };
    const h = HEIGHT + pad.b - 22;
    const ctx = hidpi(canvas, w, h);
    const pw = w - pad.l - pad.r, ph = h - pad.t - pad.b;
    const ypix = (v) => pad.t + ph - ((tr(v) - tlo) / (thi - tlo || 1)) * ph;
    ctx.font = FONT;
    ctx.strokeStyle = t.grid; ctx.fillStyle = t.muted; ctx.lineWidth = 1;
    ctx.textAlign = "right"; ctx.textBaseline = "middle";
    for (const v of ticks) {
      const y = Math.round(ypix(v)) + 0.5;
      ctx.beginPath(); ctx.moveTo(pad.l, y); ctx.lineTo(w - pad.r, y); ctx.stroke();
      ctx.fillText(tickText(v), pad.l - 5, y);
    }
    if (fig.y_label) {
      ctx.save(); ctx.translate(8, pad.t + ph / 2); ctx.rotate(-Math.PI / 2); ctx.textAlign = "center";
      ctx.fillText(fig.y_label, 0, 0); ctx.restore();
    }
    const n = fig.categories.length, k = fig.series.length || 1;
    const gw = pw / Math.max(1, n), bw = Math.max(1, (gw * 0.8) / k);
    geom = { gw, pad };
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
    ctx.fillStyle = t.muted;
    const every = slant ? Math.max(1, Math.ceil(13 / gw)) : 1;
    fig.categories.forEach((c, ci) => {
      if (ci % every) return;
      const cx = pad.l + (ci + 0.5) * gw, cy = pad.t + ph + 4;
      if (!slant) { ctx.textAlign = "center"; ctx.textBaseline = "top"; ctx.fillText(String(c), cx, cy); return; }
      ctx.save(); ctx.translate(cx, cy); ctx.rotate(-0.61); ctx.textAlign = "right"; ctx.textBaseline = "middle";
      ctx.fillText(String(c), 0, 0); ctx.restore();
    });
  };
  canvas.addEventListener("mousemove", (ev) => {
    if (!geom) return;
    const rect = canvas.getBoundingClientRect();
    const ci = Math.floor((ev.clientX - rect.left - geom.pad.l) / geom.gw);
    clear(readout);
    if (ci < 0 || ci >= fig.categories.length) return;
    readout.append(el("span", { class: "muted", text: String(fig.categories[ci]) }));
    fig.series.forEach((s) => readout.append(el("span", { class: "val", text: `${s.name} ${fmtNum(s.y[ci])}` })));
  });
  draw();
  new ResizeObserver(() => { if (Math.abs(node.clientWidth - parseFloat(canvas.style.width)) > 1) draw(); }).observe(node);
}
