// The runs page: pages of runs asked from the server as the user scrolls (GET /api/runs?limit=&cursor=),
// filtered and sorted by the server, drawn virtualised; or the parameters view of the runs the filters keep.
// State (filters, sort, columns, selection, view) lives in the URL.

import { alertBadge } from "./alerts.js";
import { reportButton } from "./download.js";
import { GroupCharts, groupBySelect, groupColors, groupItems, groupRow, groupRows } from "./groups.js";
import { paramsDefaults, paramsView, specOf } from "./params.js";
import { apiSort, fetchRuns } from "./runpages.js";
import { setQuery } from "./state.js";
import { alignDecimals, clear, dot, el, errorBox, fmtAgo, fmtDuration, fmtNum, fmtTime, fmtValue, loading, num, runColor, runColors, shortId, statusBadge } from "./util.js";

const ROW_H = 34;
const REFRESH_MS = 4000;
// Rows per page as the table scrolls; the grouped and parameters views draw at most DRAWN runs.
const PAGE = 100;
const DRAWN = 2000;
const STATUSES = ["running", "finished", "failed", "crashed", "stopped"];

function readState() {
  const p = new URLSearchParams(location.search);
  const list = (k) => (p.get(k) || "").split(",").filter(Boolean);
  // cols: null until the user chooses (the default columns then follow the store's most common metric).
  return { project: p.get("project") || "", status: p.get("status") || "", tags: p.getAll("tag").filter(Boolean),
    q: p.get("q") || "", sort: p.get("sort") || "created_at", desc: p.get("desc") !== "0",
    cols: p.has("cols") ? list("cols") : null, sel: list("sel"),
    view: p.get("view") === "params" ? "params" : "table", pc: p.getAll("pc").filter(Boolean), pm: p.get("pm") || "",
    sx: p.get("sx") || "", sy: p.get("sy") || "", groupBy: p.get("groupby") || "", open: p.getAll("open") };
}

/**
 * The default metric: the one most runs logged, ties broken as `tracker runs` breaks them (the server
 * says which: `default_metric`), so the page and the CLI show the same.
 */
function commonMetric(data) {
  if (data.default_metric !== undefined) return data.default_metric;
  const counts = new Map();
  for (const r of data.runs) for (const k of Object.keys(r.last_metrics || {})) counts.set(k, (counts.get(k) || 0) + 1);
  let best = null;
  for (const [k, n] of counts) if (!best || n > best[1]) best = [k, n];
  return best ? best[0] : null;
}

/** A running run's duration grows with the page's clock; the others are as listed. */
function liveDuration(r) {
  return r.status === "running" && r.created_at ? Math.max(0, Date.now() / 1000 - r.created_at) : r.duration;
}

function writeState(s, push) {
  const p = new URLSearchParams();
  if (s.project) p.set("project", s.project);
  if (s.status) p.set("status", s.status);
  s.tags.forEach((t) => p.append("tag", t));
  if (s.q) p.set("q", s.q);
  if (s.sort !== "created_at") p.set("sort", s.sort);
  if (!s.desc) p.set("desc", "0");
  if (s.cols !== null) p.set("cols", s.cols.join(","));
  if (s.sel.length) p.set("sel", s.sel.join(","));
  if (s.groupBy) p.set("groupby", s.groupBy);
  if (s.groupBy) s.open.forEach((g) => p.append("open", g));
  if (s.view === "params") {
    p.set("view", "params");
    s.pc.forEach((k) => p.append("pc", k));
    if (s.pm) p.set("pm", s.pm);
    if (s.sx) p.set("sx", s.sx);
    if (s.sy) p.set("sy", s.sy);
  }
  setQuery(p, push);
}

const BASE_COLUMNS = [
  { key: "name", label: "name", get: (r) => r.name || "", text: true },
  { key: "id", label: "id", get: (r) => r.id, text: true, show: shortId, cls: "mono" },
  { key: "project", label: "project", get: (r) => r.project || "", text: true },
  { key: "group", label: "group", get: (r) => r.group || "", text: true, ifAny: true },
  { key: "status", label: "status", get: (r) => r.status, text: true },
  { key: "created_at", label: "started", get: (r) => r.created_at, show: (v) => fmtAgo(v), title: (v) => (v ? fmtTime(v) : "") },
  { key: "duration", label: "duration", get: liveDuration, show: fmtDuration, cls: "num" },
  { key: "records", label: "records", hint: "records of every schema (metrics, plugins' records, system samples)", get: (r) => r.records, show: (v) => fmtNum(v), cls: "num" },
  { key: "last_step", label: "step", get: (r) => r.last_step, show: (v) => fmtNum(v), cls: "num" },
];

function extraColumn(spec) {
  const [kind, ...rest] = spec.split(":");
  if (kind === "config") {
    const key = rest.join(":");
    return { key: spec, label: key, get: (r) => r.config_flat[key], show: fmtValue, removable: true,
      cls: (v) => (typeof v === "number" || num(v) !== null ? "num" : "") };
  }
  if (kind === "metric") {
    const stat = rest.pop();
    const name = rest.join(":");
    const get = stat === "last"
      ? (r) => num(r.last_metrics[name] ?? (r.stats && r.stats[name] ? r.stats[name].last : null))
      : (r) => (r.stats && r.stats[name] ? num(r.stats[name][stat]) : null);
    return { key: spec, label: `${name} ${stat}`, get, show: (v) => fmtNum(v), cls: "num", removable: true, metric: name };
  }
  return null;
}

export function mount(root, params, ctx) {
  ctx.setCrumbs("runs");
  let state = readState();
  let data = null;
  let timer = null;
  let stopped = false;
  let rows = [];

  const filter = el("input", { type: "search", placeholder: "filter: name, id, project, tag…  ( / )", "aria-label": "filter runs", "data-filter": true, value: state.q });
  const projectSel = el("select", { "aria-label": "project" });
  const statusSel = el("select", { "aria-label": "status" }, el("option", { value: "", text: "any status" }), STATUSES.map((s) => el("option", { value: s, text: s })));
  const tagSel = el("select", { "aria-label": "tag" });
  // Sweeps: a trial's run carries the tag sweep:<id>; choosing a sweep filters by that tag.
  const sweepSel = el("select", { "aria-label": "sweep" });
  const sweepLink = el("a", { "data-link": true, class: "sweep-link", hidden: true, text: "sweep page" });
  const tagChips = el("span", { class: "chips" });
  const count = el("span", { class: "count muted" });
  // Grouping: the menu (rebuilt when the config keys change), the charts of the groups above the table.
  const groupSlot = el("span", { class: "group-by" });
  const groupBox = el("section", { class: "box group-box", hidden: true });
  const groupCharts = new GroupCharts(groupBox);
  let groupKeysShown = null;
  const compareBtn = el("button", { class: "primary", type: "button", text: "compare" });
  const clearSel = el("button", { type: "button", text: "clear selection" });
  const chooser = el("details", { class: "chooser" }, el("summary", { text: "columns" }));
  const chooserBody = el("div", { class: "chooser-body" });
  chooser.append(chooserBody);
  const viewBtns = ["table", "params"].map((v) => el("button", { type: "button", class: "seg", dataset: { view: v },
    text: v === "table" ? "table" : "parameters", on: { click: () => { state.view = v; update(true); } } }));
  const toolbar = el("div", { class: "toolbar" }, filter, projectSel, statusSel, sweepSel, tagSel, tagChips, sweepLink, chooser, groupSlot, count, el("span", { class: "grow" }),
    el("span", { class: "segs", role: "group", "aria-label": "view" }, viewBtns), clearSel, compareBtn,
    // The report of what is on screen: the selection (else the filtered runs), the grouping, the metric columns.
    reportButton(() => ({ ...chartParams(), by: state.groupBy, metrics: data ? chartMetrics().join(",") : "",
      title: state.project ? `${state.project}${state.groupBy ? ` by ${state.groupBy}` : ""}` : "" })));
  const firstLine = loading("Loading runs…");
  const message = el("div", { class: "message" }, firstLine);
  // A store never read before takes seconds to list (its derived data is built): say so while it does.
  const loadStart = performance.now();
  const firstTimer = setInterval(() => {
    const secs = (performance.now() - loadStart) / 1000;
    if (secs >= 1) firstLine.textContent = `Loading runs… ${secs.toFixed(1)}s (a store read for the first time builds its derived data under its index/ folder; the next visit is fast)`;
  }, 200);
  const paramsNode = el("div", { class: "box params", hidden: true });
  const scroller = el("div", { class: "scroller" });
  const table = el("table", { class: "grid runs" });
  const thead = el("thead");
  const tbody = el("tbody");
  table.append(thead, tbody);
  scroller.append(table);
  // On a narrow screen the table is wider than its box: say so, and which way the rest is.
  const cue = el("p", { class: "scroll-cue muted", hidden: true, "aria-hidden": "true" });
  const updateCue = () => {
    const more = scroller.scrollWidth - scroller.clientWidth - scroller.scrollLeft;
    const wide = scroller.scrollWidth > scroller.clientWidth + 1 && !scroller.hidden;
    scroller.classList.toggle("more-right", wide && more > 1);
    cue.hidden = !wide;
    cue.textContent = more > 1 ? "more columns: scroll the table sideways →" : "← scroll back for the first columns";
  };
  scroller.addEventListener("scroll", updateCue, { passive: true });
  new ResizeObserver(updateCue).observe(scroller);
  root.append(toolbar, message, groupBox, cue, scroller, paramsNode);

  /** The extra columns: the user's, or by default the last and min of the most common metric. */
  function chosenCols() {
    if (state.cols !== null) return state.cols;
    const m = data ? commonMetric(data) : null;
    return m ? [`metric:${m}:last`, `metric:${m}:min`] : [];
  }

  function columns() {
    const anyGroup = data && (data.groups || []).length > 0;
    return BASE_COLUMNS.filter((c) => !c.ifAny || anyGroup).concat(chosenCols().map(extraColumn).filter(Boolean));
  }

  /** The runs of the parameters view: the selected ones among those the server sent, or all of them. */
  function shownInParams() {
    const sel = rows.filter((r) => state.sel.includes(r.id));
    return sel.length ? sel : rows;
  }

  /** How many rows the current view draws from the start: a page and what was scrolled, or DRAWN. */
  function wanted() {
    if (state.view === "params" || state.groupBy) return DRAWN;
    return Math.min(10000, Math.max(PAGE, Math.ceil(rows.length / PAGE) * PAGE));
  }

  /** What the server is asked: the filters, the sort, the statistics of the metric columns. */
  function query() {
    return { project: state.project, status: state.status, tag: state.tags, q: state.q,
      sort: apiSort(state.sort, state.desc) };
  }

  /** The metrics whose statistics the shown columns and the parameters view need. */
  function statsNeeded() {
    const ps = state.view === "params" && data ? paramsDefaults(state, data, commonMetric(data), shownInParams()) : null;
    const specs = chosenCols().concat(ps ? [ps.pm, ps.sx, ps.sy] : []);
    return [...new Set(specs.map((s) => specOf(s)).filter((s) => s && s.metric).map((s) => s.metric))].sort();
  }

  // The filters and sort the rows on screen were asked with: another answer starts the rows again.
  let askedKey = null;
  function update(push = false) {
    writeState(state, push);
    const key = JSON.stringify([query(), state.view === "params" || !!state.groupBy]);
    if (data && key !== askedKey) { refresh(true); return; }
    renderAll();
    // A column or an axis of a metric not fetched yet: its statistics.
    if (data && statsNeeded().some((m) => !statsHave.includes(m))) refresh();
  }
  let statsHave = [];

  let typing = null;
  filter.addEventListener("input", () => {
    clearTimeout(typing);
    typing = setTimeout(() => { state.q = filter.value; update(false); }, 250);
  });
  projectSel.addEventListener("change", () => { state.project = projectSel.value; update(true); });
  statusSel.addEventListener("change", () => { state.status = statusSel.value; update(true); });
  tagSel.addEventListener("change", () => {
    if (tagSel.value && !state.tags.includes(tagSel.value)) state.tags = state.tags.concat(tagSel.value);
    tagSel.value = "";
    update(true);
  });
  sweepSel.addEventListener("change", () => {
    state.tags = state.tags.filter((t) => !t.startsWith("sweep:")).concat(sweepSel.value ? [sweepSel.value] : []);
    update(true);
  });
  compareBtn.addEventListener("click", () => ctx.navigate(`/compare?runs=${state.sel.join(",")}`));
  clearSel.addEventListener("click", () => { state.sel = []; update(false); });
  scroller.addEventListener("scroll", () => requestAnimationFrame(() => { renderRows(); moreIfNear(); }));

  function fillSelect(sel, first, values, value) {
    clear(sel);
    sel.append(el("option", { value: "", text: first }));
    for (const v of values) sel.append(el("option", { value: v, text: v }));
    if (value && !values.includes(value)) sel.append(el("option", { value, text: value }));
    sel.value = value;
  }

  function renderControls() {
    fillSelect(projectSel, "any project", data.projects, state.project);
    statusSel.value = state.status;
    fillSelect(tagSel, "+ tag", data.tags.filter((t) => !state.tags.includes(t)), "");
    const sweeps = data.tags.filter((t) => t.startsWith("sweep:"));
    const sweepOn = state.tags.find((t) => t.startsWith("sweep:")) || "";
    fillSelect(sweepSel, "any sweep", sweeps, sweepOn);
    for (const o of sweepSel.options) if (o.value) o.textContent = o.value.slice("sweep:".length);
    sweepSel.hidden = !sweeps.length && !sweepOn;
    sweepLink.hidden = !sweepOn;
    if (sweepOn) sweepLink.href = `/sweeps/${encodeURIComponent(sweepOn.slice("sweep:".length))}`;
    clear(tagChips);
    for (const t of state.tags) {
      tagChips.append(el("button", { type: "button", class: "chip", title: "remove this tag filter", text: `${t} ✕`,
        on: { click: () => { state.tags = state.tags.filter((x) => x !== t); update(true); } } }));
    }
    compareBtn.disabled = state.sel.length < 2;
    compareBtn.textContent = `compare ${state.sel.length || ""} selected`.replace("  ", " ");
    clearSel.hidden = state.sel.length === 0;
    if (!chooser.open) renderChooser();
    const keysNow = JSON.stringify(data.config_keys);
    if (keysNow !== groupKeysShown || groupSlot.firstChild === null || groupSlot.firstChild.value !== state.groupBy) {
      groupKeysShown = keysNow;
      clear(groupSlot).append(groupBySelect(data.config_keys, state.groupBy, (v) => { state.groupBy = v; state.open = []; update(true); }));
    }
  }

  function renderChooser() {
    clear(chooserBody);
    const toggle = (spec) => {
      const cols = chosenCols();
      state.cols = cols.includes(spec) ? cols.filter((c) => c !== spec) : cols.concat(spec);
      update(true);
    };
    const cfg = el("div", { class: "chooser-col" }, el("h4", { text: "config" }));
    for (const k of data.config_keys) {
      const spec = `config:${k}`;
      cfg.append(el("label", {}, el("input", { type: "checkbox", checked: chosenCols().includes(spec), on: { change: () => toggle(spec) } }), k));
    }
    if (!data.config_keys.length) cfg.append(el("p", { class: "muted", text: "no config keys" }));
    const met = el("div", { class: "chooser-col" }, el("h4", { text: "metrics" }));
    for (const name of data.metric_names) {
      met.append(el("div", { class: "metric-choice" }, el("span", { text: name }),
        ["last", "min", "max"].map((stat) => {
          const spec = `metric:${name}:${stat}`;
          return el("label", {}, el("input", { type: "checkbox", checked: chosenCols().includes(spec), on: { change: () => toggle(spec) } }), stat);
        })));
    }
    if (!data.metric_names.length) met.append(el("p", { class: "muted", text: "no metrics yet" }));
    chooserBody.append(cfg, met);
  }
  chooser.addEventListener("toggle", () => { if (chooser.open) renderChooser(); });

  function renderHead() {
    clear(thead);
    const tr = el("tr");
    const all = el("input", { type: "checkbox", "aria-label": "select all shown", title: "select all shown",
      checked: rows.length > 0 && rows.length <= 200 && rows.every((r) => state.sel.includes(r.id)),
      on: { change: (ev) => {
        const ids = rows.slice(0, 200).map((r) => r.id);
        state.sel = ev.target.checked ? [...new Set(state.sel.concat(ids))] : state.sel.filter((id) => !ids.includes(id));
        update(false);
      } } });
    tr.append(el("th", { class: "sel" }, all));
    for (const c of columns()) {
      const arrow = state.sort === c.key ? (state.desc ? " ▾" : " ▴") : "";
      const th = el("th", { class: typeof c.cls === "string" ? c.cls : "", title: `${c.hint ? `${c.hint}; ` : ""}sort by ${c.label}` },
        el("button", { type: "button", class: "sort", text: c.label + arrow, on: { click: () => {
          // First click: text A to Z; a metric best first (lower for losses and errors, higher for
          // accuracies, as `tracker compare` decides); other numbers largest first.
          if (state.sort === c.key) state.desc = !state.desc; else { state.sort = c.key; state.desc = firstDesc(c); }
          update(true);
        } } }));
      if (c.removable) th.append(el("button", { type: "button", class: "remove", title: "remove column", text: "✕",
        on: { click: () => { state.cols = chosenCols().filter((x) => x !== c.key); update(true); } } }));
      tr.append(th);
    }
    thead.append(tr);
  }

  function firstDesc(c) {
    if (c.text) return false;
    const better = c.metric && data && data.metric_better ? data.metric_better[c.metric] : null;
    return better === "min" ? false : true;
  }

  function cell(c, r) {
    const v = c.get(r);
    if (c.key === "name") {
      // The colours of the runs listed, as every page gives them to the runs it shows (util.js runColors);
      // a selected run shows the colour the compare page will give it.
      const color = (state.sel.includes(r.id) && selColors ? selColors[r.id] : listColors[r.id]) || runColor(r.id);
      return el("td", { class: "name" }, dot(color), el("a", { href: `/runs/${encodeURIComponent(r.id)}`, text: r.name || shortId(r.id) }),
        r.alerts ? alertBadge(r) : null);
    }
    if (c.key === "status") return el("td", {}, statusBadge(r.status));
    if (c.key === "tags") return el("td", { text: r.tags.join(", ") });
    const cls = typeof c.cls === "function" ? c.cls(v) : c.cls || "";
    let text = c.show ? c.show(v) : (v ?? "–");
    if (colDecimals.has(c.key) && cls === "num") text = alignDecimals([text], colDecimals.get(c.key))[0];
    return el("td", { class: cls, title: c.title ? c.title(v) : undefined, text });
  }

  // Per metric or config column, the most decimals any shown row writes: every cell is padded to it, so
  // the decimal points of a column line up (the table draws only the rows in view, so it is worked out
  // over all of them here).
  const colDecimals = new Map();
  function measureColumns(cols) {
    colDecimals.clear();
    for (const c of cols) {
      if (!c.removable || !c.show) continue;
      let widest = 0;
      for (const r of rows) {
        const t = c.show(c.get(r));
        if (/^-?[0-9\u2009]+\.[0-9]+$/.test(t)) widest = Math.max(widest, t.length - t.indexOf(".") - 1);
      }
      if (widest) colDecimals.set(c.key, widest);
    }
  }

  function renderRows() {
    const cols = columns();
    selColors = state.sel.length > 1 ? runColors(state.sel) : null;
    if (listedFor !== rows) { listedFor = rows; listColors = runColors(rows.map((r) => r.id)); }
    const top = scroller.scrollTop;
    const height = scroller.clientHeight || 600;
    const first = Math.max(0, Math.floor(top / ROW_H) - 10);
    const list = items || rows;
    const last = Math.min(list.length, Math.ceil((top + height) / ROW_H) + 10);
    clear(tbody);
    const spacer = (h) => { const tr = el("tr", { class: "spacer" }); tr.style.height = `${h}px`; return tr; };
    if (first > 0) tbody.append(spacer(first * ROW_H));
    for (let i = first; i < last; i++) {
      if (items && items[i].group) {
        const g = items[i].group;
        const isOpen = state.open.includes(g.label);
        tbody.append(groupRow(g, cols, { color: groupColorOf[g.label], isOpen, selected: state.sel,
          onToggle: () => { state.open = isOpen ? state.open.filter((x) => x !== g.label) : state.open.concat(g.label); update(true); },
          onSelect: (ids, on) => { state.sel = on ? [...new Set(state.sel.concat(ids))] : state.sel.filter((x) => !ids.includes(x)); update(false); } }));
        continue;
      }
      const r = items ? items[i].run : rows[i];
      const tr = el("tr", { dataset: { id: r.id }, class: `${state.sel.includes(r.id) ? "selected" : ""}${items ? " in-group" : ""}` });
      tr.append(el("td", { class: "sel" }, el("input", { type: "checkbox", "aria-label": `select ${r.name || r.id}`, checked: state.sel.includes(r.id),
        on: { change: (ev) => {
          state.sel = ev.target.checked ? state.sel.concat(r.id) : state.sel.filter((x) => x !== r.id);
          update(false);
        } } })));
      for (const c of cols) tr.append(cell(c, r));
      tbody.append(tr);
    }
    if (last < list.length) tbody.append(spacer((list.length - last) * ROW_H));
  }

  // While grouped: the table's items (group rows, and the runs of open groups) and each group's colour.
  let items = null;
  let groupColorOf = {};

  /** The metrics the group charts draw: those of the metric columns shown (else the default metric). */
  function chartMetrics() {
    const names = [];
    for (const spec of chosenCols()) {
      const c = extraColumn(spec);
      if (c && c.metric && !names.includes(c.metric)) names.push(c.metric);
    }
    const m = commonMetric(data);
    return names.length ? names.slice(0, 6) : m ? [m] : [];
  }

  /** The runs the group charts cover: the selection, else the runs the filters keep (as the server filters). */
  function chartParams() {
    if (state.sel.length) return { runs: state.sel.join(",") };
    return { project: state.project, status: state.status, tag: state.tags, q: state.q };
  }

  function renderGroups() {
    const grouped = !!state.groupBy && state.view === "table" && data.total > 0;
    groupBox.hidden = !grouped;
    if (!grouped) { items = null; groupCharts.key = null; return; }
    const groups = groupRows(rows, state.groupBy);
    groupColorOf = groupColors(groups.map((g) => g.label));
    items = groupItems(groups, state.open);
    count.textContent = `${count.textContent} in ${groups.length.toLocaleString("en-US")} group${groups.length === 1 ? "" : "s"}`;
    table.dataset.groups = String(groups.length);
    groupCharts.update({ by: state.groupBy, metrics: chartMetrics(), params: chartParams(), force: chartsStale, colors: groupColorOf });
    chartsStale = false;
  }
  let chartsStale = false;

  function renderAll() {
    if (!data) return;
    const cols = columns();
    rows = data.runs;  // filtered and sorted by the server, as many as were asked for
    measureColumns(cols);
    items = null;
    groupBox.hidden = !(state.groupBy && state.view === "table" && data.total);
    const n = (x) => x.toLocaleString("en-US");
    count.textContent = (data.matched === data.total ? `${n(data.total)} runs` : `${n(data.matched)} of ${n(data.total)} runs`)
      + (rows.length < data.matched ? ` (${n(rows.length)} loaded)` : "");
    table.dataset.loaded = String(rows.length);
    table.dataset.matched = String(data.matched);
    renderControls();
    clear(message);
    if (data.building) {
      message.append(el("p", { class: "building muted", "data-building": "1",
        text: `Reading this store for the first time: ${n(data.building.done)} of ${n(data.building.total)} runs listed, newest first; the rest fill in as its catalog is built (index/).` }));
    }
    if (!data.total) {
      scroller.hidden = true;
      if (data.hint) {  // a team database no run has reached yet: how runs get there
        message.append(el("div", { class: "empty" },
          el("h2", { text: "No runs yet" }),
          el("p", {}, "This team database (", el("code", { text: data.store }), ") has no runs yet. ",
            data.hint.charAt(0).toUpperCase() + data.hint.slice(1), "."),
          el("pre", { class: "code", text: '# tracker.toml of each machine that trains\n# (the password: in PGPASSWORD or ~/.pgpass)\n[team]\nurl = "' + data.store.replace(":***@", "@") + '"' }),
          el("p", { class: "muted", text: "Runs show up here by themselves as they arrive; no reload needed." })));
        return;
      }
      message.append(el("div", { class: "empty" },
        el("h2", { text: "No runs yet" }),
        el("p", {}, "This store (", el("code", { text: data.store }), ") has no runs. Log a first one from Python:"),
        el("pre", { class: "code", text: 'import tracker\n\nwith tracker.start_run(project="demo", config={"lr": 0.01}) as run:\n    for step in range(100):\n        run.log({"loss": 1 / (step + 1)}, step=step)' }),
        el("p", { class: "muted", text: "Runs show up here by themselves as they start; no reload needed." })));
      return;
    }
    for (const b of viewBtns) b.classList.toggle("on", b.dataset.view === state.view);
    scroller.hidden = state.view !== "table";
    paramsNode.hidden = state.view !== "params";
    if (state.view === "params") {
      const picked = shownInParams();
      const cut = rows.length < data.matched ? ` (the first ${n(rows.length)} of ${n(data.matched)} in this order: filter to narrow)` : "";
      const note = picked.some((r) => state.sel.includes(r.id)) ? `the ${picked.length} selected runs` : `the ${n(picked.length)} runs the filters keep${cut} (select runs to show only those)`;
      const ps = { ...state, ...paramsDefaults(state, data, commonMetric(data), picked) };
      clear(paramsNode).append(paramsView(picked, data, ps, { navigate: ctx.navigate, note: `Showing ${note}.`,
        onChange: (next) => { Object.assign(state, next); update(true); } }));
      return;
    }
    if (!rows.length) {
      message.append(el("p", { class: "empty-filter" }, "No run matches these filters. ",
        el("button", { type: "button", text: "clear filters", on: { click: () => {
          Object.assign(state, { project: "", status: "", tags: [], q: "" });
          filter.value = "";
          update(true);
        } } })));
    }
    renderGroups();
    renderHead();
    renderRows();
    updateCue();
  }

  let selColors = null;
  let listColors = {};
  let listedFor = null;
  let chartsAt = Date.now();
  let last = null;  // the last answer: {key, etag, data}

  // Each answer belongs to the request generation that asked; a newer question makes older answers moot.
  let gen = 0;

  /**
   * Ask for the rows on screen again (with the ETag of the last answer: 304 when nothing changed), or, with
   * `restart`, for the first page of new filters or a new sort.
   */
  async function refresh(restart = false) {
    clearTimeout(timer);
    const my = ++gen;
    const metricNames = statsNeeded();
    const started = performance.now();
    const q = query();
    const drawsAll = state.view === "params" || !!state.groupBy;
    if (restart) { table.dataset.ready = ""; count.textContent = `${count.textContent.split(" (")[0]} (loading…)`; }
    try {
      // default=1: the default metric's statistics come with the first answer (one load, not two).
      // (the default metric is left out of stats=: default=1 brings it, and the URL, so its ETag, stays the same)
      const asked = metricNames.filter((m) => !data || m !== data.default_metric);
      const limit = restart ? (drawsAll ? DRAWN : PAGE) : wanted();
      const got = await fetchRuns({ ...q, limit, stats: asked.join(","), default: "1" }, restart ? null : last);
      clearInterval(firstTimer);
      if (stopped || my !== gen) return;
      askedKey = JSON.stringify([q, drawsAll]);
      last = got;
      if (got.fresh || !data || restart) {
        // A listing that changed (runs added, runs that logged more) redraws the group charts, at most
        // once every 10 s: they read every run of the groups.
        if (data && Date.now() - chartsAt > 10_000) { chartsStale = true; chartsAt = Date.now(); }
        data = got.data;
        statsHave = metricNames.concat(data.default_metric ? [data.default_metric] : []);
        if (restart) scroller.scrollTop = 0;
      }
      renderAll();
      if (!window.__runsFirstPaint) {
        window.__runsFirstPaint = performance.now();
        performance.mark("runs-first-paint");
      }
      if (statsNeeded().some((m) => !statsHave.includes(m))) { refresh(); return; }
      table.dataset.ready = "1";  // every shown column has its values
      moreIfNear();
    } catch (err) {
      if (stopped || my !== gen) return;
      clear(message);
      message.append(errorBox(`cannot list runs: ${err.message} (retrying)`));
    }
    // A big store costs the server more per listing: poll less often (10x the time a listing took); while a
    // never-read store's catalog is built, every second (its progress line).
    const every = data && (data.building || data.choices_pending) ? 1000 : Math.max(REFRESH_MS, (performance.now() - started) * 10);
    if (!stopped && my === gen) timer = setTimeout(refresh, document.hidden ? every * 4 : every);
  }

  // The next page, asked with the last answer's cursor when the table is scrolled near its last loaded row.
  let loadingMore = false;
  async function moreIfNear() {
    if (!data || !data.next || loadingMore || state.view !== "table" || state.groupBy || scroller.hidden) return;
    const bottom = scroller.scrollTop + (scroller.clientHeight || 600);
    if (bottom < (rows.length - 30) * ROW_H) return;
    loadingMore = true;
    const my = gen;
    try {
      const asked = statsHave.filter((m) => m !== data.default_metric);
      const got = await fetchRuns({ ...query(), limit: PAGE, cursor: data.next, stats: asked.join(","), default: "1" }, null);
      if (stopped || my !== gen) return;
      const have = new Set(data.runs.map((r) => r.id));
      data = { ...got.data, runs: data.runs.concat(got.data.runs.filter((r) => !have.has(r.id))) };
      renderAll();
    } catch (err) {
      if (stopped || my !== gen) return;
      clear(message);
      message.append(errorBox(`cannot list more runs: ${err.message} (scroll again to retry)`));
      return;
    } finally {
      loadingMore = false;
    }
    requestAnimationFrame(moreIfNear);  // still near the end (a tall screen): one more page
  }

  refresh();
  return { destroy() { stopped = true; clearTimeout(timer); clearInterval(firstTimer); groupCharts.destroy(); } };
}
