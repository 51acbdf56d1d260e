// The run page: the header and the charts first, then every other section as its part arrives (each with
// its own loading and error state); a running run updates in place. The charts' state lives in the URL.

import { MetricChart } from "./chart.js";
import { alertsSection } from "./alerts.js";
import { artifactsSection, imagesSection, systemSection } from "./capture.js";
import { environmentSection } from "./environment.js";
import { lastLinesNode, logsSection } from "./logs.js";
import { lineageBox } from "./lineage.js";
import { mediaSection } from "./media.js";
import { tablesSection, textsSection } from "./logged.js";
import { panelNode, tableNode } from "./panels.js";
import { readChartState, writeChartState } from "./state.js";
import { api, box, breakable, clear, dot, el, errorBox, flatten, fmtBytes, fmtDuration, fmtNum, fmtTime, fmtValue, loading, runColor, shortId, statusBadge } from "./util.js";

const POLL_MS = 1000;
const MAX_POINTS = 2000;
// A zoom waits this long for the next one before asking the server for its range.
const ZOOM_DEBOUNCE_MS = 150;
const TRACE_LINES = 10;

/**
 * The run page's sections, in order. Each is {id, title, render(ctx) -> node | null, part?, when?(ctx)}.
 * ctx: {detail (parts of GET /api/runs/{id}), id (the full id), color, state, navigate}.
 * `part`: the part of the run endpoint the section draws. The parts of EARLY come with the header; any
 * other part is asked for on its own after the header and charts are drawn, and the section shows a
 * loading line meanwhile (when `when(ctx)` says it will have something to show) and its own error if
 * the request fails. A section whose part is {error} shows that error; a section that throws shows its
 * error; the others still render. To add one, add an entry here and a part in tracker/ui/parts.py (docs/ui.md).
 */
export const SECTIONS = [
  { id: "error", title: "Error", render: errorSection },
  { id: "alerts", title: "Alerts", render: alertsSection, part: "alerts", when: (ctx) => has(ctx, "alert") },
  { id: "charts", title: "Metrics", render: chartsSection, part: "metric_names" },
  { id: "logs", title: "Logs", render: (ctx) => (has(ctx, "console") || ctx.detail.info.status === "running" ? logsSection(ctx) : null) },
  { id: "config", title: "Config", render: configSection },
  { id: "summary-values", title: "Summary values", render: summaryValuesSection },
  { id: "summaries", title: "Summaries", render: summariesSection, part: "summaries", when: () => true },
  { id: "system", title: "System", render: systemSection, part: "system", when: (ctx) => has(ctx, "system", "system.gpu") },
  { id: "environment", title: "Environment", render: (ctx) => (has(ctx, "environment") ? environmentSection(ctx) : null) },
  { id: "artifacts", title: "Artifacts", render: artifactsSection, part: "artifacts", when: (ctx) => has(ctx, "artifact") },
  { id: "lineage", title: "Lineage", render: (ctx) => (has(ctx, "artifact", "artifact_use") ? lineageBox(ctx.id, ctx.navigate) : null) },
  { id: "images", title: "Images", render: imagesSection, part: "images", when: (ctx) => has(ctx, "image") },
  { id: "media", title: "Media", render: (ctx) => (has(ctx, "audio", "video", "object3d", "html") ? mediaSection(ctx) : null) },
  { id: "texts", title: "Text values", render: textsSection, part: "texts", when: (ctx) => has(ctx, "text") },
  { id: "tables", title: "Tables", render: tablesSection, part: "tables", when: (ctx) => has(ctx, "table") },
  { id: "panels", title: "Panels", render: panelsSection, part: "panels" },
  { id: "problems", title: "Problems found while reading", render: problemsSection, part: "problems" },
];

/** The parts that come with the first request: what the header and the charts need (all cheap). */
const EARLY = ["info", "schemas", "metric_names", "panels", "axes"];

function has(ctx, ...schemas) {
  const present = Array.isArray(ctx.detail.schemas) ? ctx.detail.schemas : [];
  return schemas.some((s) => present.includes(s));
}

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
  // What the run printed last, beside its traceback (the NCCL error above it, the loader's warnings).
  if (has(ctx, "console")) {
    const side = el("div", { class: "error-side" }, ...[...node.childNodes].slice(1));
    node.append(el("div", { class: "error-columns" }, side, lastLinesNode(ctx, 100)));
  }
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

// Each panel is asked for on its own: a slow plugin delays only its own panel.
function panelsSection(ctx) {
  const list = ctx.detail.panels;
  if (!Array.isArray(list)) return box("Panels", partError(ctx, "panels"));
  if (!list.length) return null;
  const body = el("div", { class: "panels" });
  for (const p of list) {
    const slot = el("section", { class: "panel", dataset: { panel: p.name, state: "loading" } },
      el("h3", {}, p.title, el("span", { class: "muted", text: ` · ${p.plugin || "?"} · ${p.schema}` })), loading("Drawing the panel…"));
    body.append(slot);
    api(`/api/runs/${encodeURIComponent(ctx.id)}/panels`, { names: p.name }).then((res) => {
      if (ctx.stopped) return;
      const got = res.panels.find((x) => x.name === p.name);
      slot.replaceWith(got ? panelNode(got) : el("section", { class: "panel", dataset: { panel: p.name, state: "error" } },
        errorBox(`panel ${p.name}: no longer offered`)));
    }).catch((err) => {
      slot.dataset.state = "error";
      slot.lastChild.replaceWith(errorBox(`cannot load panel ${p.name}: ${err.message}`));
    });
  }
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
  // define_metric(..., step_metric=...): "as defined" draws those metrics against their axis, by default.
  const axes = ctx.detail.axes && !Array.isArray(ctx.detail.axes) && !ctx.detail.axes.error ? ctx.detail.axes : {};
  if (Object.keys(axes).length) {
    xSel.append(el("option", { value: "defined", text: `x: as defined (${[...new Set(Object.values(axes))].join(", ")})` }));
    if (!s.xGiven) s.x = "defined";
  } else if (s.x === "defined") s.x = "step";
  xSel.value = s.x;
  const smoothOn = el("input", { type: "checkbox", checked: s.smoothing > 0, "aria-label": "smoothing on" });
  const slider = el("input", { type: "range", min: 0.01, max: 0.99, step: 0.01, value: s.smoothing || 0.6, disabled: !(s.smoothing > 0), "aria-label": "smoothing" });
  const sliderVal = el("span", { class: "muted mono", text: s.smoothing > 0 ? s.smoothing.toFixed(2) : "off" });
  const filter = el("input", { type: "search", placeholder: "filter metrics  ( / )", "data-filter": true, "aria-label": "filter metrics", value: s.q });
  const grid = el("div", { class: "charts" });
  const statGrid = el("div", { class: "stats" });
  const status = el("div", { class: "chart-status" });
  const smoothLabel = el("label", { class: "slider", title: "exponential moving average; the raw line stays drawn" }, smoothOn, "smoothing ", slider, sliderVal);
  // Hidden until there is a chart to act on (x axis and smoothing mean nothing to single values).
  const toolbar = el("div", { class: "toolbar chart-toolbar", hidden: true }, filter, xSel, smoothLabel);
  ctx.chartControls = { toolbar, lineOnly: [xSel, smoothLabel] };
  const node = box("Metrics", toolbar, status, grid, statGrid);
  ctx.charts = new Map();
  ctx.grid = grid;
  ctx.statGrid = statGrid;
  ctx.chartStatus = status;
  xSel.addEventListener("change", () => { s.x = xSel.value; s.xGiven = true; s.zoom = {}; ctx.saveState(true); loadSeries(ctx, true); });
  const setSmoothing = (v, push) => {
    s.smoothing = v;
    slider.disabled = !(v > 0);
    sliderVal.textContent = v > 0 ? v.toFixed(2) : "off";
    for (const c of ctx.charts.values()) c.chart.setOptions({ smoothing: v });
    ctx.saveState(push);
  };
  smoothOn.addEventListener("change", () => setSmoothing(smoothOn.checked ? Number(slider.value) : 0, true));
  slider.addEventListener("input", () => setSmoothing(Number(slider.value), false));
  filter.addEventListener("input", () => { s.q = filter.value; applyFilter(ctx); ctx.saveState(false); });
  if (!names.length) status.append(el("p", { class: "muted", text: "No metrics logged yet." }));
  else status.append(loading("Loading metrics…"));
  requestAnimationFrame(() => loadSeries(ctx, true));
  return node;
}

/** The charts' toolbar only with charts: x and smoothing for line charts, the filter also for many values. */
function showChartControls(ctx) {
  const cc = ctx.chartControls;
  if (!cc) return;
  const lines = [...ctx.charts.values()].some((c) => !c.chart.isStat);
  for (const n of cc.lineOnly) n.hidden = !lines;
  cc.toolbar.hidden = !lines && ctx.charts.size < 8 && !ctx.state.q;
}

function applyFilter(ctx) {
  const q = ctx.state.q.toLowerCase();
  for (const [name, c] of ctx.charts) c.card.hidden = !name.toLowerCase().includes(q);
}

function chartCard(ctx, name) {
  const body = el("div", { class: "chart-body" });
  const log = el("input", { type: "checkbox", checked: ctx.state.log.includes(name) });
  const big = el("button", { type: "button", class: "icon", title: "widen", text: "⤢" });
  const axis = el("span", { class: "muted axis-of" });
  const card = el("div", { class: "chart", dataset: { metric: name } },
    el("div", { class: "chart-head" }, el("h3", { title: name }, breakable(name)), axis, el("span", { class: "grow" }),
      el("label", { class: "muted" }, log, " log"), big), body);
  const chart = new MetricChart(body, { title: name, xMode: ctx.state.x, log: log.checked, smoothing: ctx.state.smoothing,
    zoom: ctx.state.zoom[name] || null, onZoom: (range) => zoomTo(ctx, name, chart, range) });
  log.addEventListener("change", () => {
    ctx.state.log = log.checked ? ctx.state.log.concat(name) : ctx.state.log.filter((n) => n !== name);
    ctx.saveState(true);
    chart.setOptions({ log: log.checked });
  });
  big.addEventListener("click", () => { card.classList.toggle("wide"); });
  card.hidden = !!ctx.state.q && !name.toLowerCase().includes(ctx.state.q.toLowerCase());
  return { card, chart, axis };
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
  if (range) ctx.state.zoom[name] = { ...range }; else delete ctx.state.zoom[name];
  ctx.saveState(false);
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
  // Against a defined axis a new point may take its x from a record before the cursor: read it all again.
  if (ctx.state.x === "defined") reset = true;
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
      const axis = res.axes && res.axes[name] ? res.axes[name] : null;  // define_metric's step_metric
      c.chart.xName = axis;
      c.axis.textContent = axis ? `vs ${axis}` : "";
      c.chart.setRuns([{ id: ctx.id, label: name, color, x: s.x, y: s.y, y_min: s.y_min, y_max: s.y_max }]);
      // Metrics logged once go to the row of values, the others to the grid of charts.
      const home = c.chart.isStat ? ctx.statGrid : ctx.grid;
      if (c.card.parentNode !== home) home.append(c.card);
      c.card.classList.toggle("stat-card", !!c.chart.isStat);
    }
  }
  showChartControls(ctx);
  // Too many appended points: fetch the whole series again, downsampled by the server.
  if (Object.values(ctx.series).some((s) => s.x.length > 6000)) return loadSeries(ctx, true);
  return res;
}

// --- the page ---------------------------------------------------------------------------------

function header(ctx) {
  const info = ctx.detail.info;
  const env = info.env || {};
  const dur = el("span", { class: "mono", title: "from the run's start to its end (until now while it runs)", text: `ran ${fmtDuration(info.duration)}` });
  ctx.durationNode = dur;
  ctx.statusNode = el("span", {}, statusBadge(info.status));
  const crashed = info.status === "crashed";
  const facts = [
    info.project ? el("span", { text: info.project }) : null,
    // The run's group: a link to the runs page grouped, this group unfolded.
    info.group ? el("a", { href: `/?groupby=group&open=${encodeURIComponent(info.group)}`, "data-link": true, class: "run-group",
      text: `group ${info.group}${info.job_type ? ` · ${info.job_type}` : ""}` }) : info.job_type ? el("span", { text: `job type ${info.job_type}` }) : null,
    ctx.statusNode,
    el("span", { text: `started ${fmtTime(info.created_at)}` }),
    // A crashed run has no end: what it has is when it was last seen logging.
    crashed ? el("span", { class: "last-seen", text: `last seen ${fmtTime(info.ended_at)} (${fmtDuration(info.duration)} after the start)` }) : dur,
    el("span", { title: "records of every schema (metrics, plugins' records, system samples)", text: `${fmtNum(info.records || 0)} records` }),
    env.host ? el("span", { text: `host ${env.host}` }) : null,
    env.git_commit ? el("span", { class: "mono", text: `commit ${String(env.git_commit).slice(0, 9)}` }) : null,
    el("span", { class: "mono muted", title: info.id, text: `id ${info.id}` }),
  ].filter(Boolean);
  const crash = crashed ? crashNote(info) : null;
  return el("div", { class: "run-head" },
    el("h1", {}, dot(ctx.color), el("span", { class: "run-name", text: info.name || shortId(info.id) })),
    el("div", { class: "facts" }, facts.flatMap((f, i) => (i ? [el("span", { class: "sep", text: "·" }), f] : [f]))),
    info.tags.length ? el("div", { class: "tags" }, info.tags.map((t) => el("span", { class: "tag", text: t }))) : null,
    info.notes ? el("p", { class: "notes-text", text: info.notes }) : null, crash);
}

/** What is known of a crashed run: who was writing it, where, when it last logged, what it holds. */
function crashNote(info) {
  const ws = Array.isArray(info.writers_seen) ? info.writers_seen : [];
  const who = ws.length
    ? ws.map((w) => `process ${w.pid ?? "?"} on ${w.host || "?"} (last wrote ${fmtTime(w.last_written)})`).join("; ")
    : `${info.writers || 0} writer${info.writers === 1 ? "" : "s"}`;
  const held = `${fmtNum(info.records || 0)} record${info.records === 1 ? "" : "s"}${info.last_step !== null && info.last_step !== undefined ? `, last step ${fmtNum(info.last_step)}` : ""}`;
  return el("p", { class: "crash-note", dataset: { crash: "1" } },
    el("strong", { text: "This run crashed: " }),
    `its writer stopped without finishing the run. Last record logged ${fmtTime(info.ended_at)} by ${who}. `,
    `What it logged until then is kept: ${held}.`);
}

export function mount(root, params, nav) {
  const ref = params.id;
  const ctx = { id: ref, color: null, state: readChartState(), charts: new Map(), series: {}, zooms: {}, cursor: null,
    stopped: false, navigate: nav.navigate };
  ctx.saveState = (push = false) => writeChartState(ctx.state, {}, push);
  nav.setCrumbs(el("a", { href: "/", text: "runs" }), shortId(ref));
  const status = el("div", {}, loading("Loading run…"));
  root.append(status);
  let timer = null;
  let generation = 0;

  function sectionNode(s) {
    try { return s.render(ctx); } catch (err) { console.warn(err); return box(s.title, errorBox(err.message)); }
  }

  function place(slot, s, node) {
    if (node) { node.dataset.section = s.id; slot.replaceWith(node); } else slot.remove();
  }

  // The header and the sections whose parts came early now; the other parts each on its own request.
  function renderSections(sectionsRoot) {
    clear(sectionsRoot);
    const gen = generation;
    for (const s of SECTIONS) {
      const slot = el("div", { class: "slot" });
      sectionsRoot.append(slot);
      if (!s.part || s.part in ctx.detail) { place(slot, s, sectionNode(s)); continue; }
      if (s.when && s.when(ctx)) {
        const wait = box(s.title, loading(`Loading ${s.title.toLowerCase()}…`));
        wait.dataset.section = s.id;
        wait.dataset.state = "loading";
        slot.replaceWith(wait);
        fetchPart(s, wait, gen);
      } else fetchPart(s, slot, gen);
    }
  }

  async function fetchPart(s, slot, gen) {
    let res;
    try {
      res = await api(`/api/runs/${encodeURIComponent(ctx.id)}`, { parts: s.part });
    } catch (err) {
      if (ctx.stopped || gen !== generation) return;
      const node = box(s.title, errorBox(`cannot load ${s.title.toLowerCase()}: ${err.message}`));
      node.dataset.state = "error";
      place(slot, s, node);
      return;
    }
    if (ctx.stopped || gen !== generation) return;
    ctx.detail[s.part] = res[s.part];
    place(slot, s, sectionNode(s));
  }

  async function poll() {
    if (ctx.stopped) return;
    try {
      const res = await loadSeries(ctx, false);
      if (ctx.stopped) return;
      const info = ctx.detail.info;
      if (res && res.status !== info.status) {
        // finished, failed or crashed: read the run again (error, summaries, panels).
        await load();
        return;
      }
      if (info.status === "running" && ctx.durationNode) ctx.durationNode.textContent = `ran ${fmtDuration(Date.now() / 1000 - info.created_at)}`;
    } catch (err) { console.warn(err); }
    if (!ctx.stopped && ctx.detail.info.status === "running") timer = setTimeout(poll, document.hidden ? POLL_MS * 5 : POLL_MS);
  }

  // The header first (the run's info costs a few stat calls, even on a store never read), then what the
  // charts need, which on a run never read means building its derived data: a progress line meanwhile.
  async function load() {
    generation += 1;
    let detail;
    try {
      const head = await api(`/api/runs/${encodeURIComponent(ref)}`, { parts: "info,build" });
      if (ctx.stopped) return;
      const building = showHeaderFirst(head);
      try {
        detail = { ...head, ...(await api(`/api/runs/${encodeURIComponent(head.info && head.info.id ? head.info.id : ref)}`, { parts: EARLY.join(",") })) };
      } finally { if (building) building.stop(); }
    } catch (err) {
      clear(status).append(errorBox(err.status === 404 || err.status === 400 ? `${err.message}` : `cannot load the run: ${err.message}`),
        el("p", {}, el("a", { href: "/", text: "All runs" })));
      return;
    }
    if (ctx.stopped) return;
    ctx.detail = detail;
    const info = detail.info;
    if (!info || info.error && !info.id) {
      clear(status).append(errorBox(`cannot read the run: ${(info && info.error) || "no info"}`));
      return;
    }
    // The full id, whatever prefix the URL holds: the colour and every later request use it.
    ctx.id = info.id;
    ctx.color = runColor(info.id);
    nav.setCrumbs(el("a", { href: "/", text: "runs" }), info.project || "", el("span", { class: "crumb-name", text: info.name || shortId(info.id) }));
    document.title = `${info.name || shortId(info.id)} · tracker`;
    nav.setLive(info.status === "running");
    for (const c of ctx.charts.values()) c.chart.destroy();
    ctx.charts = new Map();
    dropZooms(ctx);
    ctx.cursor = null;
    // The header drawn first stays (a node a reader or a test holds is not replaced by an equal one).
    const head = ctx.headNode && ctx.headNode.parentNode === status ? ctx.headNode : null;
    clear(status);
    const sections = el("div", { class: "sections" });
    status.append(head || header(ctx), sections);
    renderSections(sections);
    if (info.status === "running") timer = setTimeout(poll, POLL_MS);
  }

  /** The header of `head` at once, and while the rest is read a line saying what is being built. */
  function showHeaderFirst(head) {
    const info = head.info;
    if (!info || !info.id) return null;
    ctx.detail = head;
    ctx.color = runColor(info.id);
    clear(status);
    const line = el("p", { class: "loading build-progress", dataset: { building: "1" } });
    ctx.headNode = header(ctx);
    status.append(ctx.headNode, line);
    const b = head.build;
    const started = performance.now();
    const text = () => {
      const secs = ((performance.now() - started) / 1000).toFixed(1);
      if (b && b.unbuilt_bytes > 0) {
        return `Reading this run for the first time: building its derived data from ${fmtBytes(b.unbuilt_bytes)} of JSONL (kept under the store's index/ folder, so the next visit is fast) · ${secs}s`;
      }
      return `Loading the charts… ${secs}s`;
    };
    line.textContent = text();
    const timer = setInterval(() => { line.textContent = text(); }, 200);
    return { stop() { clearInterval(timer); } };
  }

  load();
  return { destroy() { ctx.stopped = true; clearTimeout(timer); dropZooms(ctx); if (ctx.logsStop) ctx.logsStop(); if (ctx.mediaGrid) ctx.mediaGrid.destroy(); for (const c of ctx.charts.values()) c.chart.destroy(); document.title = "tracker"; } };
}
