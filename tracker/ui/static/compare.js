// The compare page: every metric with the runs overlaid, the config that differs, summaries side by side.

import { textNodes } from "./ansi.js";
import { MetricChart } from "./chart.js";
import { reportButton } from "./download.js";
import { whyTheyDiffer } from "./environment.js";
import { GroupCharts, groupBySelect } from "./groups.js";
import { mediaCompareBox } from "./media.js";
import { readChartState, writeChartState } from "./state.js";
import { api, box, breakable, clear, dot, el, errorBox, fmtCell, fmtDuration, fmtTime, fmtValue, loading, runColors, shortId, statusBadge } from "./util.js";

// The colours of the compared runs: each run's own, moved apart where two are close (set in load()).
let COLORS = {};
const runColor = (id) => COLORS[id];

/** Colour the runs of the tables below as `colors` ({id: colour}) says (the report page's runs). */
export function useColors(colors) { COLORS = colors; }

const POLL_MS = 2000;
const MAX_POINTS = 2000;
const ZOOM_DEBOUNCE_MS = 150;

function label(run) { return `${run.name || shortId(run.id)} · ${shortId(run.id)}`; }

function runChip(run) {
  return el("a", { class: "run-chip", href: `/runs/${encodeURIComponent(run.id)}` }, dot(runColor(run.id)), label(run), " ", statusBadge(run.status));
}

/** The config that differs (and, folded, the keys the runs share) of {runs, config_diff, config_same}. */
export function configDiff(data) {
  const runs = data.runs;
  const diffKeys = Object.keys(data.config_diff);
  const sameKeys = Object.keys(data.config_same);
  // Values right-aligned under right-aligned headers, so each value sits under its own run.
  const head = el("tr", {}, el("th", { text: "key" }), runs.map((r) => el("th", { class: "num" }, dot(runColor(r.id)), label(r))));
  const rows = diffKeys.map((k) => el("tr", {}, el("th", { text: k }), data.config_diff[k].map((v) => el("td", { class: "num", text: fmtValue(v) }))));
  const parts = [];
  if (diffKeys.length) parts.push(el("div", { class: "table-wrap" }, el("table", { class: "grid diff" }, el("thead", {}, head), el("tbody", {}, rows))));
  else parts.push(el("p", { class: "muted", text: "The runs have the same config." }));
  if (sameKeys.length) {
    parts.push(el("details", {}, el("summary", { text: `${sameKeys.length} ${sameKeys.length === 1 ? "key" : "keys"} with the same value` }),
      el("table", { class: "kv" }, el("tbody", {}, sameKeys.map((k) => el("tr", {}, el("th", { text: k }), el("td", { text: fmtValue(data.config_same[k]) })))))));
  }
  return box("Config that differs", ...parts);
}

function cellValue(row, v) {
  if (row.unit === "time") return fmtTime(v);
  if (row.unit === "seconds") return fmtDuration(v);
  return fmtCell(row.field, v);
}

/** Summaries side by side, the best value of each row marked, of {runs, sections}. */
export function sectionsNode(data) {
  const runs = data.runs;
  return box("Summaries side by side", el("p", { class: "muted", text: "★ marks the best value of a row (lower for losses and errors, higher for accuracies), as tracker compare does." }),
    data.sections.map((s) => {
      if (!s.rows.length) return null;
      const head = el("tr", {}, el("th", { text: s.labels.length ? s.labels.join(" · ") : "" }), el("th", { text: "field" }),
        runs.map((r) => el("th", { class: "num" }, dot(runColor(r.id)), label(r))));
      const body = s.rows.map((row) => el("tr", {},
        el("th", {}, Object.values(row.labels).map((v, i) => [i ? " · " : "", ...textNodes(fmtValue(v))])),
        el("td", { class: "field", text: row.field + (row.better ? (row.better === "min" ? " ↓" : " ↑") : "") }),
        row.values.map((v, i) => el("td", { class: `num${row.best.includes(i) ? " best" : ""}` }, ...textNodes(cellValue(row, v)), row.best.includes(i) ? " ★" : ""))));
      return el("div", { class: "summary" }, el("h3", {}, s.title, s.summarizer ? el("span", { class: "muted", text: ` · ${s.summarizer}` }) : null),
        el("div", { class: "table-wrap" }, el("table", { class: "grid side" }, el("thead", {}, head), el("tbody", {}, body))),
        s.notes.length ? el("ul", { class: "notes" }, s.notes.map((n) => el("li", { text: n }))) : null);
    }));
}

export function mount(root, params, nav) {
  const ids = (new URLSearchParams(location.search).get("runs") || "").split(",").filter(Boolean);
  nav.setCrumbs(el("a", { href: "/", text: "runs" }), "compare");
  const status = el("div", {}, loading("Loading comparison…"));
  root.append(status);
  const state = { ...readChartState(), stopped: false, charts: new Map(), series: new Map(), zooms: {}, runs: [],
    groupBy: new URLSearchParams(location.search).get("groupby") || "", groupCharts: null, media: null };
  const save = (push = false) => writeChartState(state, { runs: ids.join(","), ...(state.groupBy ? { groupby: state.groupBy } : {}) }, push);
  let timer = null;

  function dropZooms() {
    for (const z of Object.values(state.zooms)) { z.seq++; clearTimeout(z.timer); }
    state.zooms = {};
  }

  // A chart was zoomed to `range` (null: reset): fetch each run's metric within it at full resolution.
  function zoomTo(name, chart, range) {
    const z = (state.zooms[name] ||= { seq: 0, timer: null });
    clearTimeout(z.timer);
    const seq = ++z.seq;
    if (range) state.zoom[name] = { ...range }; else delete state.zoom[name];
    save(false);
    if (!range) return;
    z.timer = setTimeout(async () => {
      const x = state.x;
      const runs = state.runs;
      const results = await Promise.all(runs.map((r) => api(`/api/runs/${encodeURIComponent(r.id)}/metrics`,
        { names: name, x, max_points: MAX_POINTS, x_min: range.min, x_max: range.max }).catch((err) => ({ error: err.message }))));
      if (seq !== z.seq || state.stopped || x !== state.x) return;
      const failed = results.find((res) => res.error);
      if (failed) { chart.zoomFailed(failed.error); return; }
      const out = [];
      results.forEach((res, i) => {
        const s = res.series[name];
        if (s) out.push({ id: runs[i].id, label: label(runs[i]), color: runColor(runs[i].id), x: s.x, y: s.y, y_min: s.y_min, y_max: s.y_max });
      });
      chart.setZoomRuns(out);
    }, ZOOM_DEBOUNCE_MS);
  }

  async function loadSeries(data, grid, statGrid, chartStatus) {
    const results = await Promise.all(data.runs.map((r) => api(`/api/runs/${encodeURIComponent(r.id)}/metrics`, { x: state.x, max_points: MAX_POINTS })
      .catch((err) => ({ error: err.message }))));
    if (state.stopped) return;
    clear(chartStatus);
    const failed = results.map((res, i) => (res.error ? `${label(data.runs[i])}: ${res.error}` : null)).filter(Boolean);
    if (failed.length) chartStatus.append(errorBox(`cannot load metrics of ${failed.join("; ")}`));
    const names = [...new Set(results.flatMap((res) => Object.keys(res.series || {})))];
    if (!names.length) chartStatus.append(el("p", { class: "muted", text: "These runs have no metrics." }));
    // Grouped: one line and band per group instead of one line per run (the runs' charts stay, hidden).
    grid.hidden = statGrid.hidden = !!state.groupBy;
    if (state.groupBy && state.groupCharts) state.groupCharts.update({ by: state.groupBy, metrics: names.slice(0, 12), params: { runs: ids.join(",") } });
    for (const name of names) {
      let c = state.charts.get(name);
      if (!c) {
        const body = el("div", { class: "chart-body" });
        const log = el("input", { type: "checkbox", checked: state.log.includes(name) });
        const card = el("div", { class: "chart", dataset: { metric: name } },
          el("div", { class: "chart-head" }, el("h3", { title: name }, breakable(name)), el("span", { class: "grow" }), el("label", { class: "muted" }, log, " log")), body);
        grid.append(card);
        const chart = new MetricChart(body, { title: name, xMode: state.x, smoothing: state.smoothing, log: log.checked,
          statLabels: true, zoom: state.zoom[name] || null, onZoom: (range) => zoomTo(name, chart, range) });
        log.addEventListener("change", () => {
          state.log = log.checked ? state.log.concat(name) : state.log.filter((n) => n !== name);
          save(true);
          chart.setOptions({ log: log.checked });
        });
        c = { card, chart };
        state.charts.set(name, c);
      } else c.chart.setOptions({ xMode: state.x });
      const runs = [];
      results.forEach((res, i) => {
        const s = res.series && res.series[name];
        if (s) runs.push({ id: data.runs[i].id, label: label(data.runs[i]), color: runColor(data.runs[i].id), ...s });
      });
      c.chart.setRuns(runs);
      const home = c.chart.isStat ? statGrid : grid;
      if (c.card.parentNode !== home) home.append(c.card);
      c.card.classList.toggle("stat-card", !!c.chart.isStat);
    }
    return results;
  }

  async function load() {
    let data;
    try {
      data = await api("/api/compare", { runs: ids.join(",") });
    } catch (err) {
      clear(status).append(errorBox(err.message), el("p", {}, el("a", { href: "/", text: "Choose runs on the runs page" })));
      return;
    }
    if (state.stopped) return;
    for (const c of state.charts.values()) c.chart.destroy();
    state.charts = new Map();
    dropZooms();
    state.runs = data.runs;
    COLORS = runColors(data.runs.map((r) => r.id));
    clear(status);
    document.title = "compare · tracker";
    const xSel = el("select", { "aria-label": "x axis" }, el("option", { value: "step", text: "x: step" }), el("option", { value: "time", text: "x: time" }));
    xSel.value = state.x;
    const smoothOn = el("input", { type: "checkbox", checked: state.smoothing > 0, "aria-label": "smoothing on" });
    const slider = el("input", { type: "range", min: 0.01, max: 0.99, step: 0.01, value: state.smoothing || 0.6, disabled: !(state.smoothing > 0), "aria-label": "smoothing" });
    const sliderVal = el("span", { class: "muted mono", text: state.smoothing > 0 ? state.smoothing.toFixed(2) : "off" });
    const grid = el("div", { class: "charts" });
    const statGrid = el("div", { class: "stats" });
    const chartStatus = el("div", {}, loading("Loading metrics…"));
    const legend = el("div", { class: "legend runs-legend" }, data.runs.map(runChip));
    const groupBox = el("div", { class: "group-box", hidden: !state.groupBy });
    if (state.groupCharts) state.groupCharts.destroy();
    state.groupCharts = new GroupCharts(groupBox, { title: "groups" });
    const groupSel = groupBySelect(Object.keys(data.config_diff).concat(Object.keys(data.config_same)), state.groupBy, (v) => {
      state.groupBy = v;
      groupBox.hidden = !v;
      save(true);
      loadSeries(data, grid, statGrid, chartStatus);
    });
    const report = reportButton(() => ({ runs: ids.join(","), by: state.groupBy, metrics: [...state.charts.keys()].slice(0, 12).join(","),
      title: `compare ${data.runs.length} runs` }));
    if (state.media) state.media.destroy();
    state.media = mediaCompareBox(data.runs, runColor);
    status.append(el("div", { class: "run-head" }, el("h1", {}, `Comparing ${data.runs.length} runs`, report), legend),
      box("Metrics", el("div", { class: "toolbar" }, xSel, el("label", { class: "slider" }, smoothOn, "smoothing ", slider, sliderVal), groupSel), chartStatus, groupBox, grid, statGrid),
      state.media.node, configDiff(data), whyTheyDiffer(data.runs, runColor), sectionsNode(data));
    xSel.addEventListener("change", () => { state.x = xSel.value; state.zoom = {}; save(true); loadSeries(data, grid, statGrid, chartStatus); });
    const setSmoothing = (v, push) => {
      state.smoothing = v;
      slider.disabled = !(v > 0);
      sliderVal.textContent = v > 0 ? v.toFixed(2) : "off";
      for (const c of state.charts.values()) c.chart.setOptions({ smoothing: v });
      save(push);
    };
    smoothOn.addEventListener("change", () => setSmoothing(smoothOn.checked ? Number(slider.value) : 0, true));
    slider.addEventListener("input", () => setSmoothing(Number(slider.value), false));
    requestAnimationFrame(() => loadSeries(data, grid, statGrid, chartStatus));
    if (data.runs.some((r) => r.status === "running")) {
      nav.setLive(true);
      const tick = async () => {
        if (state.stopped) return;
        const results = await loadSeries(data, grid, statGrid, chartStatus);
        if (results && results.some((res, i) => res.status && res.status !== data.runs[i].status)) { load(); return; }
        timer = setTimeout(tick, POLL_MS);
      };
      timer = setTimeout(tick, POLL_MS);
    }
  }

  if (ids.length < 2) {
    clear(status).append(errorBox("choose at least two runs to compare"), el("p", {}, el("a", { href: "/", text: "Runs" })));
  } else load();
  return { destroy() { state.stopped = true; clearTimeout(timer); dropZooms(); for (const c of state.charts.values()) c.chart.destroy(); if (state.groupCharts) state.groupCharts.destroy(); if (state.media) state.media.destroy(); } };
}
