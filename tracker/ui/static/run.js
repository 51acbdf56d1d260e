// The run page: a header, then the sections of SECTIONS in order; a running run updates in place.

import { MetricChart } from "./chart.js";
import { artifactsSection, imagesSection, systemSection } from "./capture.js";
import { panelsNode, tableNode } from "./panels.js";
import { api, box, clear, dot, el, errorBox, flatten, fmtDuration, fmtTime, fmtValue, loading, runColor, shortId, statusBadge } from "./util.js";

const POLL_MS = 1000;
const MAX_POINTS = 2000;
// A zoom waits this long for the next one before asking the server for its range.
const ZOOM_DEBOUNCE_MS = 150;
const TRACE_LINES = 10;

/**
 * The run page's sections, in order. Each is {id, title, render(ctx) -> node | null, update?(ctx)}.
 * ctx: {detail (GET /api/runs/{id}), id, color, state, navigate}. A section whose part of the
 * detail is {error} shows that error; a section that throws shows its error; the others still render.
 * To add one (artifacts, images...), add an entry here and a part in tracker/ui/parts.py (docs/ui.md).
 */
export const SECTIONS = [
  { id: "error", title: "Error", render: errorSection },
  { id: "charts", title: "Metrics", render: chartsSection, update: updateCharts },
  { id: "config", title: "Config", render: configSection },
  { id: "summary-values", title: "Summary values", render: summaryValuesSection },
  { id: "summaries", title: "Summaries", render: summariesSection },
  { id: "system", title: "System", render: systemSection },
  { id: "artifacts", title: "Artifacts", render: artifactsSection },
  { id: "images", title: "Images", render: imagesSection },
  { id: "panels", title: "Panels", render: panelsSection },
  { id: "problems", title: "Problems found while reading", render: problemsSection },
];

function partError(ctx, name) {
  const part = ctx.detail[name];
  return part && !Array.isArray(part) && typeof part === "object" && part.error ? errorBox(`${name}: ${part.error}`) : null;
}

function errorSection(ctx) {
  const err = ctx.detail.info.error;
  if (!err) return null;
  const trace = String(err.traceback || "").replace(/\s+$/, "").split("\n").filter((l) => l !== "");
  const pre = el("pre", { class: "trace", text: trace.slice(-TRACE_LINES).join("\n") });
  const node = box("Error", el("p", { class: "error-line" }, el("strong", { text: `${err.type || "Error"}: ` }), String(err.message ?? "")));
  if (trace.length > TRACE_LINES) {
    const more = el("details", {}, el("summary", { text: `whole traceback (${trace.length} lines)` }), el("pre", { class: "trace", text: trace.join("\n") }));
    node.append(el("p", { class: "muted", text: `last ${TRACE_LINES} lines of the traceback:` }), pre, more);
  } else if (trace.length) node.append(pre);
  node.classList.add("failed");
  return node;
}

function configSection(ctx) {
  const flat = flatten(ctx.detail.info.config);
  const keys = Object.keys(flat);
  if (!keys.length) return box("Config", el("p", { class: "muted", text: "no config" }));
  return box("Config", el("table", { class: "kv" }, el("tbody", {}, keys.map((k) => el("tr", {}, el("th", { text: k }), el("td", { text: fmtValue(flat[k]) }))))));
}

// The values set with run.summary[key] = value (W&B-style API; RunInfo.summary); none: no section.
function summaryValuesSection(ctx) {
  const flat = flatten(ctx.detail.info.summary || {});
  const keys = Object.keys(flat);
  if (!keys.length) return null;
  return box("Summary values", el("table", { class: "kv" }, el("tbody", {}, keys.map((k) => el("tr", {}, el("th", { text: k }), el("td", { text: fmtValue(flat[k]) }))))));
}

function summariesSection(ctx) {
  const sums = ctx.detail.summaries;
  if (!Array.isArray(sums)) return box("Summaries", partError(ctx, "summaries"));
  if (!sums.length) return box("Summaries", el("p", { class: "muted", text: "no summaries (no records with a summarizer yet)" }));
  return box("Summaries", el("div", { class: "summaries" }, sums.map((s) => el("div", { class: "summary" },
    el("h3", {}, s.title, el("span", { class: "muted", text: ` · ${s.summarizer}` })),
    s.rows.length ? tableNode(s.columns, s.rows, s.notes) : el("p", { class: "muted", text: (s.notes || []).join("; ") || "no rows" })))));
}

function panelsSection(ctx) {
  const list = ctx.detail.panels;
  if (!Array.isArray(list)) return box("Panels", partError(ctx, "panels"));
  if (!list.length) return null;
  const body = el("div", {}, loading("Drawing panels…"));
  api(`/api/runs/${encodeURIComponent(ctx.id)}/panels`).then((res) => {
    clear(body).append(panelsNode(res.panels));
  }).catch((err) => clear(body).append(errorBox(`cannot load panels: ${err.message}`)));
  return box("Panels", body);
}

function problemsSection(ctx) {
  const probs = ctx.detail.problems;
  if (!Array.isArray(probs) || !probs.length) return partError(ctx, "problems");
  return box("Problems found while reading", el("p", { class: "muted", text: "These lines could not be read; the rest of the run is shown." }),
    el("ul", { class: "problems" }, probs.map((p) => el("li", { text: `${p.segment}${p.line ? `:${p.line}` : ""}: ${p.kind}: ${p.message}` }))));
}

// --- charts ------------------------------------------------------------------------------------

function chartsSection(ctx) {
  const names = ctx.detail.metric_names;
  if (!Array.isArray(names)) return box("Metrics", partError(ctx, "metric_names"));
  const s = ctx.state;
  const xSel = el("select", { "aria-label": "x axis" }, el("option", { value: "step", text: "x: step" }), el("option", { value: "time", text: "x: time" }));
  xSel.value = s.x;
  const slider = el("input", { type: "range", min: 0, max: 0.99, step: 0.01, value: s.smoothing, "aria-label": "smoothing" });
  const sliderVal = el("span", { class: "muted mono", text: s.smoothing.toFixed(2) });
  const filter = el("input", { type: "search", placeholder: "filter metrics  ( / )", "data-filter": true, "aria-label": "filter metrics" });
  const grid = el("div", { class: "charts" });
  const statGrid = el("div", { class: "stats" });
  const status = el("div", { class: "chart-status" });
  const node = box("Metrics", el("div", { class: "toolbar" }, filter, xSel, el("label", { class: "slider" }, "smoothing ", slider, sliderVal)), status, grid, statGrid);
  ctx.charts = new Map();
  ctx.grid = grid;
  ctx.statGrid = statGrid;
  ctx.chartStatus = status;
  xSel.addEventListener("change", () => { s.x = xSel.value; ctx.saveState(); loadSeries(ctx, true); });
  slider.addEventListener("input", () => {
    s.smoothing = Number(slider.value);
    sliderVal.textContent = s.smoothing.toFixed(2);
    for (const c of ctx.charts.values()) c.chart.setOptions({ smoothing: s.smoothing });
  });
  slider.addEventListener("change", () => ctx.saveState());
  filter.addEventListener("input", () => {
    const q = filter.value.toLowerCase();
    for (const [name, c] of ctx.charts) c.card.hidden = !name.toLowerCase().includes(q);
  });
  if (!names.length) status.append(el("p", { class: "muted", text: "No metrics logged yet." }));
  else status.append(loading("Loading metrics…"));
  requestAnimationFrame(() => loadSeries(ctx, true));
  return node;
}

function chartCard(ctx, name) {
  const body = el("div", { class: "chart-body" });
  const log = el("input", { type: "checkbox", checked: ctx.state.log.includes(name) });
  const big = el("button", { type: "button", class: "icon", title: "enlarge", text: "⤢" });
  const card = el("div", { class: "chart", dataset: { metric: name } },
    el("div", { class: "chart-head" }, el("h3", { text: name, title: name }), el("span", { class: "grow" }),
      el("label", { class: "muted" }, log, " log"), big), body);
  const chart = new MetricChart(body, { title: name, xMode: ctx.state.x, log: log.checked, smoothing: ctx.state.smoothing,
    onZoom: (range) => zoomTo(ctx, name, chart, range) });
  log.addEventListener("change", () => {
    ctx.state.log = log.checked ? ctx.state.log.concat(name) : ctx.state.log.filter((n) => n !== name);
    ctx.saveState();
    chart.setOptions({ log: log.checked });
  });
  big.addEventListener("click", () => { card.classList.toggle("wide"); });
  return { card, chart };
}

/** Forget every zoom request: a response that comes later is dropped. */
function dropZooms(ctx) {
  for (const z of Object.values(ctx.zooms)) { z.seq++; clearTimeout(z.timer); }
  ctx.zooms = {};
}

/**
 * A chart was zoomed to `range` (null: reset). After a short pause, fetch that metric within the range
 * at full resolution (max_points of the range) and draw it; the newest zoom wins, a stale answer is dropped.
 */
function zoomTo(ctx, name, chart, range) {
  const z = (ctx.zooms[name] ||= { seq: 0, timer: null });
  clearTimeout(z.timer);
  const seq = ++z.seq;
  if (!range) return;
  z.timer = setTimeout(async () => {
    const x = ctx.state.x;
    let res;
    try {
      res = await api(`/api/runs/${encodeURIComponent(ctx.id)}/metrics`,
        { names: name, x, max_points: MAX_POINTS, x_min: range.min, x_max: range.max });
    } catch (err) {
      if (seq === z.seq && !ctx.stopped) chart.zoomFailed(err.message);
      return;
    }
    if (seq !== z.seq || ctx.stopped || x !== ctx.state.x) return;
    const s = res.series[name] || { x: [], y: [], y_min: [], y_max: [] };
    chart.setZoomRuns([{ id: ctx.id, label: name, color: ctx.color, x: s.x, y: s.y, y_min: s.y_min, y_max: s.y_max }]);
  }, ZOOM_DEBOUNCE_MS);
}

/**
 * Fetch every series (reset) or only what is new since the cursor, and append it to the charts.
 * A zoomed chart keeps drawing its range; the appended points wait in the whole series for its reset.
 */
async function loadSeries(ctx, reset) {
  const params = { x: ctx.state.x, max_points: MAX_POINTS };
  if (!reset && ctx.cursor) params.since = ctx.cursor;
  let res;
  try {
    res = await api(`/api/runs/${encodeURIComponent(ctx.id)}/metrics`, params);
  } catch (err) {
    clear(ctx.chartStatus).append(errorBox(`cannot load metrics: ${err.message}`));
    return null;
  }
  if (ctx.stopped) return null;
  if (reset) ctx.series = {};
  ctx.cursor = res.cursor;
  const color = ctx.color;
  let grew = 0;
  for (const [name, s] of Object.entries(res.series)) {
    const have = ctx.series[name];
    if (have && !reset) {
      for (const k of ["x", "y", "y_min", "y_max"]) have[k].push(...s[k]);
    } else ctx.series[name] = s;
    grew += s.x.length;
  }
  if (reset || grew || !ctx.charts.size) {
    const names = Object.keys(ctx.series);
    if (names.length) clear(ctx.chartStatus);
    for (const name of names) {
      let c = ctx.charts.get(name);
      if (!c) {
        c = chartCard(ctx, name);
        ctx.charts.set(name, c);
        ctx.grid.append(c.card);
      } else if (reset) c.chart.setOptions({ xMode: ctx.state.x });
      const s = ctx.series[name];
      c.chart.setRuns([{ id: ctx.id, label: name, color, x: s.x, y: s.y, y_min: s.y_min, y_max: s.y_max }]);
      // Metrics logged once go to the row of values, the others to the grid of charts.
      const home = c.chart.isStat ? ctx.statGrid : ctx.grid;
      if (c.card.parentNode !== home) home.append(c.card);
      c.card.classList.toggle("stat-card", !!c.chart.isStat);
    }
  }
  // Too many appended points: fetch the whole series again, downsampled by the server.
  if (Object.values(ctx.series).some((s) => s.x.length > 6000)) return loadSeries(ctx, true);
  return res;
}

async function updateCharts(ctx) {
  return loadSeries(ctx, false);
}

// --- the page ---------------------------------------------------------------------------------

function header(ctx) {
  const info = ctx.detail.info;
  const env = info.env || {};
  const dur = el("span", { class: "mono", text: fmtDuration(info.duration) });
  ctx.durationNode = dur;
  ctx.statusNode = el("span", {}, statusBadge(info.status));
  const facts = [
    info.project ? el("span", { text: info.project }) : null,
    ctx.statusNode,
    el("span", { text: `started ${fmtTime(info.created_at)}` }),
    dur,
    env.host ? el("span", { text: `host ${env.host}` }) : null,
    env.git_commit ? el("span", { class: "mono", text: `commit ${String(env.git_commit).slice(0, 9)}` }) : null,
    el("span", { class: "mono muted", title: info.id, text: `id ${info.id}` }),
  ].filter(Boolean);
  return el("div", { class: "run-head" },
    el("h1", {}, dot(ctx.color), el("span", { class: "run-name", text: info.name || shortId(info.id) })),
    el("div", { class: "facts" }, facts.flatMap((f, i) => (i ? [el("span", { class: "sep", text: "·" }), f] : [f]))),
    info.tags.length ? el("div", { class: "tags" }, info.tags.map((t) => el("span", { class: "tag", text: t }))) : null,
    info.notes ? el("p", { class: "notes-text", text: info.notes }) : null);
}

function readState() {
  const p = new URLSearchParams(location.search);
  const sm = p.has("smooth") ? Number(p.get("smooth")) : NaN;
  return { x: p.get("x") === "time" ? "time" : "step", smoothing: Number.isFinite(sm) && sm >= 0 && sm < 1 ? sm : 0.6,
    log: (p.get("log") || "").split(",").filter(Boolean) };
}

export function mount(root, params, nav) {
  const id = params.id;
  const ctx = { id, color: runColor(id), state: readState(), charts: new Map(), series: {}, zooms: {}, cursor: null, stopped: false, navigate: nav.navigate };
  ctx.saveState = () => {
    const p = new URLSearchParams();
    if (ctx.state.x !== "step") p.set("x", ctx.state.x);
    if (ctx.state.smoothing !== 0.6) p.set("smooth", String(ctx.state.smoothing));
    if (ctx.state.log.length) p.set("log", ctx.state.log.join(","));
    history.replaceState(null, "", `${location.pathname}${p.toString() ? `?${p}` : ""}`);
  };
  nav.setCrumbs(el("a", { href: "/", text: "runs" }), shortId(id));
  const status = el("div", {}, loading("Loading run…"));
  root.append(status);
  let timer = null;

  function renderSections(sectionsRoot) {
    clear(sectionsRoot);
    for (const s of SECTIONS) {
      let node = null;
      try { node = s.render(ctx); } catch (err) { node = box(s.title, errorBox(err.message)); console.warn(err); }
      if (node) { node.dataset.section = s.id; sectionsRoot.append(node); }
    }
  }

  async function poll() {
    if (ctx.stopped) return;
    try {
      const res = await updateCharts(ctx);
      if (ctx.stopped) return;
      const info = ctx.detail.info;
      if (res && res.status !== info.status) {
        // finished, failed or crashed: read the run again (error, summaries, panels).
        await load(true);
        return;
      }
      if (info.status === "running" && ctx.durationNode) ctx.durationNode.textContent = fmtDuration(Date.now() / 1000 - info.created_at);
    } catch (err) { console.warn(err); }
    if (!ctx.stopped && ctx.detail.info.status === "running") timer = setTimeout(poll, document.hidden ? POLL_MS * 5 : POLL_MS);
  }

  async function load(again = false) {
    try {
      ctx.detail = await api(`/api/runs/${encodeURIComponent(id)}`);
    } catch (err) {
      clear(status).append(errorBox(err.status === 404 || err.status === 400 ? `${err.message}` : `cannot load the run: ${err.message}`),
        el("p", {}, el("a", { href: "/", text: "All runs" })));
      return;
    }
    if (ctx.stopped) return;
    const info = ctx.detail.info;
    nav.setCrumbs(el("a", { href: "/", text: "runs" }), info.project || "", el("span", { class: "crumb-name", text: info.name || shortId(id) }));
    document.title = `${info.name || shortId(id)} · tracker`;
    nav.setLive(info.status === "running");
    for (const c of ctx.charts.values()) c.chart.destroy();
    ctx.charts = new Map();
    dropZooms(ctx);
    ctx.cursor = null;
    clear(status);
    const sections = el("div", { class: "sections" });
    status.append(header(ctx), sections);
    renderSections(sections);
    if (info.status === "running") timer = setTimeout(poll, POLL_MS);
    return again;
  }

  load();
  return { destroy() { ctx.stopped = true; clearTimeout(timer); dropZooms(ctx); for (const c of ctx.charts.values()) c.chart.destroy(); document.title = "tracker"; } };
}
