// The parameters view of the runs page: how config relates to results over many runs.
// A parallel-coordinates chart over chosen config keys ending in a metric summary, and a scatter of any
// two of config keys and summaries. One line (one point) per run in the run's colour; hover names the
// run, a click opens it. Canvas only, so thousands of runs stay smooth.

import { FONT, alpha, textWidth, theme } from "./chart.js";
import { hidpi } from "./figures.js";
import { cssVar, el, fmtNum, fmtTick, fmtValue, niceTicks, num, runColor, runColors } from "./util.js";

const HEIGHT = 340;
const PAD = { t: 28, b: 30 };
// Up to this many runs get colours moved apart; more keep each run's own colour.
const SPREAD_UP_TO = 24;

/** A column spec ("config:lr", "metric:loss:min") as {label, get(row)}. */
export function specOf(spec) {
  const [kind, ...rest] = String(spec).split(":");
  if (kind === "config") {
    const key = rest.join(":");
    return { spec, label: key, get: (r) => r.config_flat[key] };
  }
  if (kind === "metric" && rest.length >= 2) {
    const stat = rest.pop();
    const name = rest.join(":");
    return { spec, label: `${name} ${stat}`, metric: name,
      get: (r) => (stat === "last" && r.last_metrics && name in r.last_metrics ? num(r.last_metrics[name])
        : r.stats && r.stats[name] ? num(r.stats[name][stat]) : null) };
  }
  return null;
}

/**
 * The view's state with defaults: config keys the shown runs have (the keys of the largest project's runs
 * when several projects are shown, most common first), the min of `metric`, the scatter of the first key
 * against it. `project` (in the result) names the project whose keys were taken, when one was.
 */
export function paramsDefaults(state, data, metric, rows = data.runs) {
  const projects = new Set(rows.map((r) => r.project || ""));
  let basis = rows, project = null;
  if (projects.size > 1) {
    const counts = new Map();
    for (const r of rows) counts.set(r.project || "", (counts.get(r.project || "") || 0) + 1);
    project = [...counts].reduce((a, b) => (b[1] > a[1] ? b : a))[0];
    basis = rows.filter((r) => (r.project || "") === project);
  }
  const have = (k) => basis.reduce((n, r) => n + (r.config_flat && k in r.config_flat ? 1 : 0), 0);
  const keys = data.config_keys.map((k) => [k, have(k)]).filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1]).map(([k]) => k);
  const pc = state.pc.length ? state.pc : keys.slice(0, 4);
  const pm = state.pm || (metric ? `metric:${metric}:min` : "");
  return { pc, pm, sx: state.sx || (pc[0] ? `config:${pc[0]}` : ""), sy: state.sy || pm,
    keysFrom: !state.pc.length && project !== null ? { project, projects: projects.size } : null };
}

/** How far `positions` (in 0..1) are from spread evenly: the quartiles' distance from 1/4, 1/2, 3/4. */
export function unevenness(positions) {
  const p = positions.filter(Number.isFinite).sort((a, b) => a - b);
  if (p.length < 2) return 0;
  const q = (f) => p[Math.min(p.length - 1, Math.floor(f * (p.length - 1) + 0.5))];
  return Math.abs(q(0.25) - 0.25) + Math.abs(q(0.5) - 0.5) + Math.abs(q(0.75) - 0.75);
}

/**
 * Whether a numeric axis over `values` reads better on a log scale: only for positive values over two
 * decades or more, and only when their logarithms spread more evenly than the values do (a uniform 0-0.5
 * stays linear even when its smallest value is 1e-4; a log-uniform 1e-5-1e-1 goes logarithmic).
 */
export function wantsLog(values) {
  const v = values.filter((x) => typeof x === "number" && Number.isFinite(x));
  if (v.length < 2) return false;
  const lo = Math.min(...v), hi = Math.max(...v);
  if (!(lo > 0) || hi / lo < 100) return false;
  const lin = unevenness(v.map((x) => (x - lo) / (hi - lo)));
  const a = Math.log10(lo), b = Math.log10(hi);
  const log = unevenness(v.map((x) => (Math.log10(x) - a) / (b - a)));
  return log < lin;
}

/** A scale over the values of one axis: numeric (log where that spreads the runs better) or categorical. */
function scaleOf(values) {
  const present = values.filter((v) => v !== null && v !== undefined && !(typeof v === "number" && !Number.isFinite(v)));
  const numeric = present.length > 0 && present.every((v) => typeof v === "number");
  if (numeric) {
    let lo = Math.min(...present), hi = Math.max(...present);
    if (wantsLog(present)) {
      const a = Math.floor(Math.log10(lo)), b = Math.ceil(Math.log10(hi));
      const ticks = [];
      for (let e = a; e <= b; e++) ticks.push(10 ** e);
      return { pos: (v) => (Math.log10(v) - a) / ((b - a) || 1), ticks, text: (v) => fmtNum(v, 3), has: (v) => typeof v === "number" && v > 0, log: true };
    }
    const nt = niceTicks(lo, hi, 4);
    lo = nt.lo; hi = nt.hi;
    return { pos: (v) => (v - lo) / ((hi - lo) || 1), ticks: nt.ticks, text: (v) => fmtTick(v, nt.step), has: (v) => typeof v === "number" && Number.isFinite(v) };
  }
  const cats = [...new Set(present.map((v) => fmtValue(v)))].sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
  const at = new Map(cats.map((c, i) => [c, cats.length === 1 ? 0.5 : i / (cats.length - 1)]));
  return { pos: (v) => at.get(fmtValue(v)), ticks: cats, text: String, has: (v) => v !== null && v !== undefined && at.has(fmtValue(v)), cats: true };
}

function distToSegment(px, py, x0, y0, x1, y1) {
  const dx = x1 - x0, dy = y1 - y0;
  const t = Math.max(0, Math.min(1, ((px - x0) * dx + (py - y0) * dy) / (dx * dx + dy * dy || 1)));
  return Math.hypot(px - (x0 + t * dx), py - (y0 + t * dy));
}

function tooltipText(r, specs) {
  return `${r.name || r.id} · ${String(r.id).slice(0, 8)}\n${specs.map((s) => `${s.label}: ${fmtValue(s.get(r))}`).join("\n")}`;
}

/**
 * A chart on a canvas with hover and click: `layout(w)` gives {items: [{row, pts: [[x, y] | null...]}], draw(ctx, w)}.
 * The node gets data-lines: the number of runs drawn.
 */
function canvasChart(kind, rows, specs, build, navigate) {
  const canvas = el("canvas", { class: `params-${kind}` });
  const tip = el("div", { class: "params-tip", hidden: true });
  const wrap = el("div", { class: "params-chart", dataset: { kind } }, canvas, tip);
  let model = null, hover = null;
  const colors = rows.length <= SPREAD_UP_TO ? runColors(rows.map((r) => r.id)) : null;
  const colorOf = (r) => (colors ? colors[r.id] : runColor(r.id));
  const draw = () => {
    const t = theme();
    const w = Math.max(280, wrap.clientWidth || 600);
    const ctx = hidpi(canvas, w, HEIGHT);
    ctx.clearRect(0, 0, w, HEIGHT);
    model = build(w, t, ctx);
    const a = rows.length > 500 ? 0.25 : rows.length > 50 ? 0.5 : 1;
    let drawn = 0;
    for (const it of model.items) {
      if (!model.paint(ctx, it, alpha(colorOf(it.row), a), 1.5)) continue;
      drawn++;
    }
    if (hover) model.paint(ctx, hover, colorOf(hover.row), 3.5);
    if (model.overlay) model.overlay(ctx);  // axis labels above the lines, so none is hidden under them
    wrap.dataset.lines = String(drawn);
    if (colors) wrap.dataset.colors = JSON.stringify(rows.map(colorOf));
  };
  const nearest = (ev) => {
    if (!model) return null;
    const rect = canvas.getBoundingClientRect();
    const x = ev.clientX - rect.left, y = ev.clientY - rect.top;
    let best = null, bestD = 8;
    for (const it of model.items) {
      const d = model.dist(it, x, y);
      if (d < bestD) { bestD = d; best = it; }
    }
    return best ? { it: best, x, y } : null;
  };
  let pending = false;
  canvas.addEventListener("mousemove", (ev) => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      const hit = nearest(ev);
      const next = hit ? hit.it : null;
      if (next !== hover) { hover = next; draw(); }
      canvas.style.cursor = hit ? "pointer" : "";
      tip.hidden = !hit;
      if (hit) {
        tip.textContent = tooltipText(hit.it.row, specs);
        tip.style.left = `${Math.min(hit.x + 12, (wrap.clientWidth || 600) - 220)}px`;
        tip.style.top = `${hit.y + 12}px`;
      }
    });
  });
  canvas.addEventListener("mouseleave", () => { tip.hidden = true; if (hover) { hover = null; draw(); } });
  canvas.addEventListener("click", (ev) => {
    const hit = nearest(ev);
    if (hit) navigate(`/runs/${encodeURIComponent(hit.it.row.id)}`);
  });
  requestAnimationFrame(draw);
  new ResizeObserver(() => { if (Math.abs(wrap.clientWidth - parseFloat(canvas.style.width || "0")) > 1) draw(); }).observe(wrap);
  return wrap;
}

/** One axis's name and tick labels; each label on a patch of the background, drawn after the lines. */
function axisLabels(ctx, t, x, scale, top, bottom, label, align = "center") {
  ctx.fillStyle = t.fg; ctx.font = `600 ${FONT}`; ctx.textAlign = align; ctx.textBaseline = "bottom";
  ctx.fillText(label, x, top - 12);
  ctx.font = FONT; ctx.textBaseline = "middle";
  const every = Math.max(1, Math.ceil(scale.ticks.length / Math.max(2, Math.floor((bottom - top) / 16))));
  scale.ticks.forEach((v, i) => {
    if (i % every) return;
    const y = bottom - scale.pos(v) * (bottom - top);
    const text = scale.text(v);
    const tx = x + (align === "right" ? -6 : 6);
    const w = textWidth(text);
    ctx.fillStyle = alpha(cssVar("--card") || t.bg, 0.85);
    ctx.fillRect(align === "right" ? tx - w - 2 : tx - 2, y - 7, w + 4, 14);
    ctx.fillStyle = t.muted;
    ctx.fillRect(x - 3, y, 6, 1);
    ctx.fillText(text, tx, y);
  });
}

/** Parallel coordinates: one vertical axis per spec, one polyline per run. */
export function parallelChart(rows, specs, navigate) {
  const values = specs.map((s) => rows.map((r) => s.get(r)));
  const scales = values.map(scaleOf);
  return canvasChart("parallel", rows, specs, (w, t, ctx) => {
    const widest = Math.max(40, ...scales[scales.length - 1].ticks.map((v) => textWidth(scales[scales.length - 1].text(v))));
    const left = Math.max(20, textWidth(specs[0].label) / 2 + 4), right = Math.max(widest + 12, textWidth(specs[specs.length - 1].label) / 2 + 4);
    const top = PAD.t, bottom = HEIGHT - PAD.b;
    const xs = specs.map((_, i) => (specs.length === 1 ? w / 2 : left + (i * (w - left - right)) / (specs.length - 1)));
    ctx.strokeStyle = t.grid; ctx.lineWidth = 1;
    xs.forEach((x) => {
      ctx.beginPath(); ctx.moveTo(Math.round(x) + 0.5, top); ctx.lineTo(Math.round(x) + 0.5, bottom); ctx.stroke();
    });
    const items = rows.map((row, ri) => ({ row, pts: xs.map((x, i) => {
      const v = values[i][ri];
      return scales[i].has(v) ? [x, bottom - scales[i].pos(v) * (bottom - top)] : null;
    }) }));
    return {
      items,
      overlay(ctx2) { xs.forEach((x, i) => axisLabels(ctx2, t, x, scales[i], top, bottom, specs[i].label, "left")); },
      paint(ctx2, it, color, width) {
        ctx2.strokeStyle = color; ctx2.lineWidth = width; ctx2.lineJoin = "round";
        let any = false, open = false;
        ctx2.beginPath();
        for (const p of it.pts) {
          if (!p) { open = false; continue; }
          if (open) { ctx2.lineTo(p[0], p[1]); any = true; } else ctx2.moveTo(p[0], p[1]);
          open = true;
        }
        ctx2.stroke();
        return any;
      },
      dist(it, x, y) {
        let d = Infinity;
        for (let i = 1; i < it.pts.length; i++) {
          const a = it.pts[i - 1], b = it.pts[i];
          if (a && b) d = Math.min(d, distToSegment(x, y, a[0], a[1], b[0], b[1]));
        }
        return d;
      },
    };
  }, navigate);
}

/** A scatter of spec `sx` (x) against `sy` (y): one point per run with both values. */
export function scatterChart(rows, sx, sy, navigate) {
  const X = scaleOf(rows.map((r) => sx.get(r))), Y = scaleOf(rows.map((r) => sy.get(r)));
  return canvasChart("scatter", rows, [sx, sy], (w, t, ctx) => {
    const yw = Math.max(30, ...Y.ticks.map((v) => textWidth(Y.text(v))));
    const left = yw + 14, right = 16, top = PAD.t, bottom = HEIGHT - PAD.b - 14;
    const px = (v) => left + X.pos(v) * (w - left - right), py = (v) => bottom - Y.pos(v) * (bottom - top);
    ctx.strokeStyle = t.grid; ctx.fillStyle = t.muted; ctx.font = FONT; ctx.lineWidth = 1;
    ctx.textAlign = "right"; ctx.textBaseline = "middle";
    for (const v of Y.ticks) { const y = Math.round(py(v)) + 0.5; ctx.beginPath(); ctx.moveTo(left, y); ctx.lineTo(w - right, y); ctx.stroke(); ctx.fillText(Y.text(v), left - 6, y); }
    ctx.textAlign = "center"; ctx.textBaseline = "top";
    const every = Math.max(1, Math.ceil(X.ticks.reduce((m, v) => Math.max(m, textWidth(X.text(v)) + 12), 0) * X.ticks.length / (w - left - right)));
    X.ticks.forEach((v, i) => {
      const x = Math.round(px(v)) + 0.5;
      ctx.beginPath(); ctx.moveTo(x, top); ctx.lineTo(x, bottom); ctx.stroke();
      if (!(i % every)) ctx.fillText(X.text(v), x, bottom + 4);
    });
    ctx.fillStyle = t.fg; ctx.font = `600 ${FONT}`;
    ctx.fillText(sx.label, left + (w - left - right) / 2, bottom + 20);
    ctx.textAlign = "left"; ctx.textBaseline = "bottom";
    ctx.fillText(sy.label, left - yw - 8 > 0 ? left - yw - 8 : 2, top - 10);
    const items = rows.map((row) => {
      const a = sx.get(row), b = sy.get(row);
      return { row, p: X.has(a) && Y.has(b) ? [px(a), py(b)] : null };
    });
    return {
      items,
      paint(ctx2, it, color, width) {
        if (!it.p) return false;
        ctx2.fillStyle = color;
        ctx2.beginPath(); ctx2.arc(it.p[0], it.p[1], width + 2, 0, 2 * Math.PI); ctx2.fill();
        return true;
      },
      dist: (it, x, y) => (it.p ? Math.hypot(x - it.p[0], y - it.p[1]) : Infinity),
    };
  }, navigate);
}

/**
 * The whole view: choices (config keys, ending metric and statistic, scatter axes) and the two charts.
 * state: {pc: [config keys], pm: "metric:name:stat", sx, sy} with the defaults filled in (paramsDefaults);
 * onChange(state) writes it to the URL.
 */
export function paramsView(rows, data, state, { onChange, navigate, note }) {
  const keys = data.config_keys;
  const metrics = data.metric_names;
  const metricSpecs = metrics.flatMap((m) => ["last", "min", "max"].map((s) => `metric:${m}:${s}`));
  const allSpecs = keys.map((k) => `config:${k}`).concat(metricSpecs);
  const pc = state.pc.filter((k) => keys.includes(k));
  const pm = metricSpecs.includes(state.pm) ? state.pm : "";
  const choices = el("div", { class: "toolbar params-choices" });
  const chips = pc.map((k) => el("button", { type: "button", class: "chip", title: "remove this axis", text: `${k} ✕`,
    on: { click: () => onChange({ ...state, pc: pc.filter((x) => x !== k) }) } }));
  const addKey = el("select", { "aria-label": "add a config key axis" }, el("option", { value: "", text: "+ config key" }),
    keys.filter((k) => !pc.includes(k)).map((k) => el("option", { value: k, text: k })));
  addKey.addEventListener("change", () => { if (addKey.value) onChange({ ...state, pc: pc.concat(addKey.value) }); });
  const metricSel = el("select", { "aria-label": "metric summary of the last axis" },
    metricSpecs.map((s) => el("option", { value: s, text: specOf(s).label })));
  metricSel.value = pm;
  metricSel.addEventListener("change", () => onChange({ ...state, pm: metricSel.value }));
  choices.append(el("span", { class: "muted", text: "axes:" }), ...chips, addKey, el("span", { class: "muted", text: "ending in" }), metricSel);
  const parts = [choices];
  const specs = pc.map((k) => specOf(`config:${k}`)).concat(pm ? [specOf(pm)] : []);
  if (!rows.length) parts.push(el("p", { class: "muted", text: "No run to show: change the filters." }));
  else if (specs.length < 2) parts.push(el("p", { class: "muted", text: "Choose at least one config key (and a metric) to draw the parallel coordinates." }));
  else parts.push(parallelChart(rows, specs, navigate));
  // the scatter
  const sx = allSpecs.includes(state.sx) ? state.sx : "";
  const sy = allSpecs.includes(state.sy) ? state.sy : "";
  const pick = (value, label, key) => {
    const sel = el("select", { "aria-label": label }, allSpecs.map((s) => el("option", { value: s, text: specOf(s).label })));
    sel.value = value || "";
    sel.addEventListener("change", () => onChange({ ...state, [key]: sel.value }));
    return sel;
  };
  parts.push(el("div", { class: "toolbar params-choices" }, el("span", { class: "muted", text: "scatter: x" }), pick(sx, "scatter x", "sx"),
    el("span", { class: "muted", text: "y" }), pick(sy, "scatter y", "sy")));
  if (rows.length && sx && sy) parts.push(scatterChart(rows, specOf(sx), specOf(sy), navigate));
  const keysNote = state.keysFrom ? el("p", { class: "muted params-keys-note", text: `These runs come from ${state.keysFrom.projects} projects with different config keys: the axes are the keys of ${state.keysFrom.project || "(no project)"}, the largest. Filter by project to compare runs of one project.` }) : null;
  return el("div", { class: "params-view" }, note ? el("p", { class: "muted", text: note }) : null, keysNote, parts);
}
