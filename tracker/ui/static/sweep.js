// Sweeps: the list of the store's sweeps, and one sweep's page: its facts, the best value so far against
// the trial number, Optuna's parameter importances, the parameters view of its trials (the runs tagged
// sweep:<id>), and its trials best first. Everything comes from /api/sweeps and /api/runs.

import { reportButton } from "./download.js";
import { barFigure, lineFigure } from "./figures.js";
import { paramsDefaults, paramsView } from "./params.js";
import { setQuery } from "./state.js";
import { api, box, clear, dot, el, errorBox, fmtAgo, fmtNum, fmtValue, loading, paletteColor, runColors, shortId, statusBadge } from "./util.js";

const REFRESH_MS = 5000;

function sweepLink(id, text = id) {
  return el("a", { href: `/sweeps/${encodeURIComponent(id)}`, "data-link": true, text, class: "mono" });
}

function goalText(s) {
  return s.metric ? `${s.goal === "maximize" ? "maximize" : "minimize"} ${s.metric}` : "no metric";
}

/** `/sweeps`: every sweep of the store, newest first. */
export function mountList(root, params, ctx) {
  ctx.setCrumbs(el("a", { href: "/", "data-link": true, text: "runs" }), "sweeps");
  const body = el("div", {}, loading("Loading sweeps…"));
  root.append(body);
  let stopped = false;
  (async () => {
    try {
      const data = await api("/api/sweeps");
      if (stopped) return;
      clear(body);
      if (!data.sweeps.length) {
        body.append(box("Sweeps", el("p", { class: "muted", text: "No sweep in this store yet. Create one with: tracker sweep create sweep.yaml, then run: tracker agent ID" })));
        return;
      }
      const head = el("tr", {}, ["sweep", "name", "project", "method", "objective", "state", "trials", "best", "created"].map((h, i) =>
        el("th", { text: h, class: i >= 6 && i <= 7 ? "num" : "" })));
      const rows = data.sweeps.map((s) => el("tr", { dataset: { sweep: s.id } },
        el("td", {}, sweepLink(s.id)), el("td", { text: s.name || "" }), el("td", { text: s.project || "" }),
        el("td", { text: s.method || "" }), el("td", { text: s.error ? s.error : goalText(s) }),
        el("td", {}, s.state ? statusBadge(s.state) : ""), el("td", { class: "num", text: s.trials ?? "" }),
        el("td", { class: "num", text: s.best === null || s.best === undefined ? "" : fmtNum(s.best) }),
        el("td", { text: s.created_at ? fmtAgo(s.created_at) : "" })));
      body.append(box("Sweeps", el("div", { class: "scroller static" }, el("table", { class: "grid sweeps" }, el("thead", {}, head), el("tbody", {}, rows)))));
    } catch (err) {
      if (!stopped) clear(body).append(errorBox(`cannot list sweeps: ${err.message}`));
    }
  })();
  return { destroy() { stopped = true; } };
}

function readState() {
  const p = new URLSearchParams(location.search);
  return { pc: p.getAll("pc").filter(Boolean), pm: p.get("pm") || "", sx: p.get("sx") || "", sy: p.get("sy") || "" };
}

function writeState(s) {
  const p = new URLSearchParams();
  s.pc.forEach((k) => p.append("pc", k));
  if (s.pm) p.set("pm", s.pm);
  if (s.sx) p.set("sx", s.sx);
  if (s.sy) p.set("sy", s.sy);
  setQuery(p, true);
}

/** `/sweeps/{id}`: one sweep. */
export function mount(root, params, ctx) {
  const id = params.id;
  ctx.setCrumbs(el("a", { href: "/", "data-link": true, text: "runs" }), el("a", { href: "/sweeps", "data-link": true, text: "sweeps" }), id);
  let state = readState();
  let stopped = false;
  let timer = null;
  let last = null;
  const header = el("div", { class: "sweep-head" }, loading("Loading the sweep…"));
  const progress = box("Best so far", el("div", { class: "figure", dataset: { part: "best" } }));
  const importance = box("Parameter importances", el("div", { class: "figure", dataset: { part: "importances" } }));
  const paramsBox = box("Parameters", el("div", { class: "params-body" }));
  const trialsBox = box("Trials, best first", el("div", { class: "trials-body" }));
  const page = el("div", { class: "sweep-page" }, header, el("div", { class: "sweep-grid" }, progress, importance), paramsBox, trialsBox);
  root.append(page);

  function renderHeader(s) {
    const counts = Object.entries(s.counts || {}).map(([k, n]) => `${n} ${k}`).join(", ");
    clear(header).append(
      el("h1", { class: "sweep-title" }, el("span", { class: "mono", text: s.id }), s.name ? ` ${s.name}` : "", " ", statusBadge(s.state),
        reportButton(() => ({ tag: `sweep:${s.id}`, metrics: s.metric || "", title: `sweep ${s.id}${s.name ? ` ${s.name}` : ""}` }))),
      el("p", { class: "muted" }, `${s.method} · ${goalText(s)} · ${s.trials} trial${s.trials === 1 ? "" : "s"}${counts ? ` (${counts})` : ""}`,
        s.best !== null && s.best !== undefined ? ` · best ${fmtNum(s.best)}` : "", s.project ? ` · project ${s.project}` : "",
        s.run_cap ? ` · run_cap ${s.run_cap}` : "", " · ",
        el("a", { href: `/?tag=${encodeURIComponent(`sweep:${s.id}`)}`, "data-link": true, text: "its runs" }),
        " · ", el("span", { text: `agents: tracker agent ${s.id}`, class: "mono" })));
  }

  function renderBest(doc) {
    const node = progress.querySelector("[data-part=best]");
    clear(node);
    const pts = doc.best_so_far;
    if (!pts.length) {
      node.append(el("p", { class: "muted", text: doc.sweep.metric ? "No finished trial yet." : "This sweep has no metric to track." }));
      return;
    }
    const x = pts.map((p) => p.number);
    const ys = pts.map((p) => p.metric);
    // Log scale where the trials' values span more than two decades (a few bad trials dwarf the rest).
    const logY = ys.every((v) => v > 0) && Math.max(...ys) / Math.min(...ys) > 100;
    lineFigure(node, { log_y: logY, series: [
      { name: `best ${doc.sweep.metric}`, x, y: pts.map((p) => p.best), kind: "line" },
      { name: doc.sweep.metric, x, y: pts.map((p) => p.metric), kind: "points" },
    ], bands: [], x_label: "trial", y_label: "" }, paletteColor);
  }

  function renderImportances(doc) {
    const node = importance.querySelector("[data-part=importances]");
    clear(node);
    const entries = Object.entries(doc.importances || {}).sort((a, b) => b[1] - a[1]);
    if (!entries.length) {
      node.append(el("p", { class: "muted", text: "Importances need at least two finished trials that differ." }));
      return;
    }
    barFigure(node, { categories: entries.map((e) => e[0]), series: [{ name: "importance", y: entries.map((e) => e[1]) }],
      y_label: "", log_y: false, note: "Optuna's get_param_importances (fANOVA), over the finished trials." }, paletteColor);
  }

  function renderTrials(doc) {
    const node = trialsBox.querySelector(".trials-body");
    clear(node);
    if (!doc.trials.length) {
      node.append(el("p", { class: "muted", text: `No trial yet: start an agent with tracker agent ${doc.sweep.id}` }));
      return;
    }
    const keys = [...new Set(doc.trials.flatMap((t) => Object.keys(t.params || {})))];
    const head = el("tr", {}, el("th", { text: "#", class: "num" }), el("th", { text: "run" }), el("th", { text: "state" }),
      el("th", { text: doc.sweep.metric || "metric", class: "num" }), keys.map((k) => el("th", { text: k })));
    const colors = runColors(doc.trials.map((t) => t.run_id).filter(Boolean));
    const rows = doc.trials.map((t) => el("tr", { dataset: { trial: String(t.number) } },
      el("td", { class: "num", text: String(t.number) }),
      el("td", {}, t.run_id ? el("a", { href: `/runs/${encodeURIComponent(t.run_id)}`, "data-link": true }, dot(colors[t.run_id]), " ", el("span", { class: "mono", text: shortId(t.run_id) })) : ""),
      el("td", { title: t.reason || "" }, statusBadge(t.state), t.exit_code ? ` exit ${t.exit_code}` : ""),
      el("td", { class: "num", text: t.metric === null || t.metric === undefined ? "" : fmtNum(t.metric) }),
      keys.map((k) => el("td", { text: k in (t.params || {}) ? fmtValue(t.params[k]) : "" }))));
    node.append(el("div", { class: "scroller static" }, el("table", { class: "grid trials" }, el("thead", {}, head), el("tbody", {}, rows))));
  }

  function renderParams(doc, runs) {
    const node = paramsBox.querySelector(".params-body");
    clear(node);
    const rows = runs.runs;
    const keys = runs.config_keys.filter((k) => rows.some((r) => r.config_flat && k in r.config_flat));
    const metrics = runs.metric_names.filter((m) => rows.some((r) => r.last_metrics && m in r.last_metrics));
    const data = { ...runs, config_keys: keys, metric_names: metrics };
    const metric = doc.sweep.metric && metrics.includes(doc.sweep.metric) ? doc.sweep.metric : metrics[0] || null;
    const swept = doc.sweep.parameters.filter((k) => keys.includes(k));
    const base = { ...state, pc: state.pc.length ? state.pc : swept.slice(0, 6), pm: state.pm || (metric ? `metric:${metric}:last` : "") };
    const ps = { ...base, ...paramsDefaults(base, data, metric, rows) };
    node.append(paramsView(rows, data, ps, { navigate: ctx.navigate, note: `The ${rows.length} runs of this sweep.`,
      onChange: (s) => { state = { pc: s.pc, pm: s.pm, sx: s.sx, sy: s.sy }; writeState(state); renderParams(doc, runs); } }));
  }

  async function refresh() {
    clearTimeout(timer);
    try {
      const doc = await api(`/api/sweeps/${encodeURIComponent(id)}`);
      if (stopped) return;
      const metric = doc.sweep.metric;
      const runs = await api("/api/runs", { tag: `sweep:${id}`, stats: metric || "" });
      if (stopped) return;
      const key = JSON.stringify([doc, runs.runs.map((r) => [r.id, r.status, r.last_metrics])]);
      if (key !== last) {
        last = key;
        renderHeader(doc.sweep);
        renderBest(doc);
        renderImportances(doc);
        renderParams(doc, runs);
        renderTrials(doc);
        page.dataset.ready = "1";
      }
      // While trials run, every 5 s; a sweep open to agents but with none running, every 30 s.
      if (doc.sweep.counts.running) timer = setTimeout(refresh, REFRESH_MS);
      else if (doc.sweep.state === "running") timer = setTimeout(refresh, REFRESH_MS * 6);
    } catch (err) {
      if (stopped) return;
      clear(header).append(errorBox(err.status === 404 ? err.message : `cannot read the sweep: ${err.message}`));
    }
  }

  refresh();
  return { destroy() { stopped = true; clearTimeout(timer); } };
}
