// Groups of runs on the runs and compare pages: the "group by" menu, group rows (count, mean ± std per
// column, expandable) built in the page from the listing it already has, and charts that draw one line and
// band per group in the group's colour (GET /api/aggregate; tracker/read/aggregate.py says how).

import { MetricChart } from "./chart.js";
import { api, clear, el, errorBox, fmtNum, fmtValue, loading, num, runColors } from "./util.js";

/** The keys a page can group by besides config keys, as tracker runs --group-by names them. */
export const GROUP_FIELDS = ["group", "job_type", "project", "tag"];

/** The value a config key holds in a run of the listing (config_flat), as the server keys a group by it. */
function configKey(v) {
  if (v === undefined || v === null) return null;
  if (typeof v === "object") return JSON.stringify(v);
  if (v === "NaN") return "NaN";
  return v;
}

/** The groups a run is in under `by` ("group", "project", "tag", "config.lr"...): one key, or one per tag. */
export function groupKeys(r, by) {
  if (by === "tag") return r.tags && r.tags.length ? [...new Set(r.tags)] : [null];
  if (by.startsWith("config.")) return [configKey((r.config_flat || {})[by.slice(7)])];
  const v = r[by];
  return [v === undefined || v === "" ? null : v];
}

/** A group's name on the page: its value as the number formats write it; "(none)" for runs without one. */
export function groupLabel(key) {
  return key === null ? "(none)" : fmtValue(key);
}

const NUMBERS = /(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)/;

/** Groups in the server's order (tracker/read/aggregate.py _order): numbers, then text by its numbers, then none. */
export function compareKeys(a, b) {
  const rank = (k) => (k === null ? 3 : typeof k === "number" || typeof k === "boolean" ? 0 : 1);
  const ra = rank(a), rb = rank(b);
  if (ra !== rb) return ra - rb;
  if (ra === 0) return Number(a) - Number(b);
  if (ra === 3) return 0;
  const pa = String(a).split(NUMBERS), pb = String(b).split(NUMBERS);
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    if (i % 2) { const d = Number(pa[i]) - Number(pb[i]); if (d) return d; } else if (pa[i] !== pb[i]) return pa[i] < pb[i] ? -1 : 1;
  }
  return pa.length - pb.length || (String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0);
}

/**
 * The groups of `rows` (runs already filtered and sorted): [{key, label, runs}], in the server's order.
 * One pass over the rows with a Map: 5,000 runs group in a few milliseconds.
 */
export function groupRows(rows, by) {
  const map = new Map();
  for (const r of rows) {
    for (const k of groupKeys(r, by)) {
      const id = typeof k === "string" ? `s:${k}` : `v:${String(k)}`;
      let g = map.get(id);
      if (!g) { g = { key: k, label: groupLabel(k), runs: [] }; map.set(id, g); }
      g.runs.push(r);
    }
  }
  return [...map.values()].sort((a, b) => compareKeys(a.key, b.key));
}

/** Mean and std (ddof 0) of a column's finite numbers over a group's runs: {mean, std, n}. */
export function columnStats(runs, get) {
  const vals = new Float64Array(runs.length);
  let n = 0;
  for (const r of runs) {
    const v = num(get(r));
    if (v !== null && Number.isFinite(v)) vals[n++] = v;
  }
  if (!n) return { mean: null, std: null, n: 0 };
  let sum = 0;
  for (let i = 0; i < n; i++) sum += vals[i];
  const mean = sum / n;
  let sq = 0;
  for (let i = 0; i < n; i++) sq += (vals[i] - mean) ** 2;
  return { mean, std: Math.sqrt(sq / n), n };
}

/** "0.031 ± 0.004" (and "(3 of 5)" where not every run of the group has a value). */
export function meanStdText(s, total, show = fmtNum) {
  if (!s || s.mean === null) return "–";
  const of = s.n < total ? ` (${s.n} of ${total})` : "";
  // Every run the same (a config value the group shares, one run): the value, not "0.3 ± 0".
  return s.std === 0 ? `${show(s.mean)}${of}` : `${show(s.mean)} ± ${show(s.std)}${of}`;
}

/** The colour of each group: the same label gets the same colour on every chart of the page. */
export function groupColors(labels) {
  const byId = runColors(labels.map((l) => `group:${l}`));
  return Object.fromEntries(labels.map((l) => [l, byId[`group:${l}`]]));
}

/** The "group by" menu: none, the run fields, every config key the store's runs have. */
export function groupBySelect(configKeys, value, onChange) {
  const sel = el("select", { "aria-label": "group by", dataset: { groupBy: "" } },
    el("option", { value: "", text: "no grouping" }),
    GROUP_FIELDS.map((f) => el("option", { value: f, text: `group by ${f}` })),
    configKeys.length ? el("optgroup", { label: "config" }, configKeys.map((k) => el("option", { value: `config.${k}`, text: `group by ${k}` }))) : null);
  if (value && ![...sel.options].some((o) => o.value === value)) sel.append(el("option", { value, text: `group by ${value}` }));
  sel.value = value || "";
  sel.addEventListener("change", () => onChange(sel.value));
  return sel;
}

/**
 * The items the runs table draws while grouped: a header item per group, and its runs when it is open.
 * `open`: the labels of the open groups.
 */
export function groupItems(groups, open) {
  const items = [];
  for (const g of groups) {
    items.push({ group: g });
    if (open.includes(g.label)) for (const r of g.runs) items.push({ run: r, in: g.label });
  }
  return items;
}

/**
 * A group's row: a toggle with its colour, label and count; then per column the mean ± std of its runs'
 * numbers, the one value they share, or how many values they hold.
 */
export function groupRow(g, cols, { color, isOpen, onToggle, selected, onSelect }) {
  const tr = el("tr", { class: `group-row${isOpen ? " open" : ""}`, dataset: { group: g.label, n: String(g.runs.length) } });
  const allSel = g.runs.every((r) => selected.includes(r.id));
  tr.append(el("td", { class: "sel" }, el("input", { type: "checkbox", "aria-label": `select the runs of ${g.label}`, checked: allSel,
    on: { change: (ev) => onSelect(g.runs.map((r) => r.id), ev.target.checked) } })));
  for (const c of cols) {
    if (c.key === "name") {
      const sw = el("span", { class: "dot" });
      sw.style.background = color;
      tr.append(el("td", { class: "name" }, el("button", { type: "button", class: "toggle", "aria-expanded": String(isOpen),
        title: isOpen ? "fold this group" : "show this group's runs", on: { click: onToggle } },
      el("span", { class: "caret", text: isOpen ? "▾" : "▸" }), sw, el("span", { class: "group-label", text: g.label }),
      el("span", { class: "group-n muted", text: ` (${g.runs.length})` }))));
      continue;
    }
    const numeric = c.cls === "num" || typeof c.cls === "function";
    const values = g.runs.map((r) => c.get(r));
    if (numeric && values.some((v) => num(v) !== null)) {
      const s = columnStats(g.runs, c.get);
      const show = c.key === "duration" ? c.show : fmtNum;
      tr.append(el("td", { class: "num", title: s.n ? `mean ± std over ${s.n} run${s.n === 1 ? "" : "s"}` : undefined,
        text: meanStdText(s, g.runs.length, show) }));
      continue;
    }
    const distinct = new Set(values.map((v) => (v === null || v === undefined ? "" : String(v))));
    if (c.key === "created_at") {
      const newest = Math.max(...values.map((v) => v || 0));
      tr.append(el("td", { class: "muted", title: "the newest run's start", text: c.show(newest || null) }));
    } else if (c.key === "status") {
      const counts = {};
      for (const v of values) counts[v] = (counts[v] || 0) + 1;
      tr.append(el("td", { class: "muted", text: Object.entries(counts).map(([k, n]) => `${n} ${k}`).join(", ") }));
    } else if (distinct.size === 1) {
      const v = values[0];
      tr.append(el("td", { class: "muted", text: c.show && c.key !== "id" ? c.show(v) : v ?? "" }));
    } else tr.append(el("td", { class: "muted", text: c.key === "id" ? "" : `${distinct.size} values` }));
  }
  return tr;
}

/**
 * Charts of groups: one per metric, one line and band per group (its colour), n and std on hover.
 * `update({by, metrics, params})` fetches GET /api/aggregate when what it shows changed.
 */
export class GroupCharts {
  constructor(node, { height = 200, title = "Groups: mean ± std" } = {}) {
    this.node = node;
    this.height = height;
    this.key = null;
    this.charts = new Map();
    this.seq = 0;
    this.head = el("div", { class: "group-charts-head" }, el("h2", { text: title }), el("span", { class: "muted note" }));
    this.status = el("div", { class: "group-charts-status" });
    this.legend = el("div", { class: "legend group-legend" });
    this.grid = el("div", { class: "charts group-charts" });
    clear(node).append(this.head, this.legend, this.status, this.grid);
  }

  /** Show the groups of `by` for `metrics` over the runs of `params` (runs=ids, or the page's filters). */
  async update({ by, metrics, params, force = false, colors = null }) {
    // colors: {label: colour} of the page's own group rows, so a group has one colour in table and chart.
    this.pageColors = colors;
    const key = JSON.stringify([by, metrics, params]);
    if (key === this.key && !force) return;
    this.key = key;
    const seq = ++this.seq;
    if (!metrics.length) {
      clear(this.status).append(el("p", { class: "muted", text: "No metric to chart: add a metric column." }));
      this.destroyCharts();
      return;
    }
    if (!this.charts.size) clear(this.status).append(loading("Loading groups…"));
    // Typing in the filter changes the runs at every key: ask once the typing pauses.
    await new Promise((resolve) => setTimeout(resolve, 250));
    if (seq !== this.seq) return;
    let doc;
    try {
      doc = await api("/api/aggregate", { ...params, by, metrics: metrics.join(","), max_points: 1000 });
    } catch (err) {
      if (seq !== this.seq) return;
      clear(this.status).append(errorBox(`cannot aggregate: ${err.message}`));
      return;
    }
    if (seq !== this.seq) return;
    this.draw(doc, metrics);
  }

  destroyCharts() {
    for (const c of this.charts.values()) c.chart.destroy();
    this.charts = new Map();
    clear(this.grid);
  }

  draw(doc, metrics) {
    clear(this.status);
    const labels = (doc.groups || []).map((g) => groupLabel(g.key));
    const own = groupColors(labels);
    const colors = Object.fromEntries(labels.map((l) => [l, (this.pageColors && this.pageColors[l]) || own[l]]));
    this.node.querySelector(".note").textContent = ` ${labels.length} group${labels.length === 1 ? "" : "s"} of ${fmtNum(doc.runs)} run${doc.runs === 1 ? "" : "s"} · line: ${doc.stat}, band: ${doc.band === "std" ? "±1 std" : doc.band === "minmax" ? "min–max" : `p${doc.band[0]}–p${doc.band[1]}`}, faint: each step's min and max`;
    clear(this.legend).append(...(doc.groups || []).map((g) => {
      const sw = el("span", { class: "dot" });
      sw.style.background = colors[groupLabel(g.key)];
      return el("span", { class: "run-chip group-chip", dataset: { group: groupLabel(g.key) } }, sw, groupLabel(g.key),
        el("span", { class: "muted", text: ` ${g.n} run${g.n === 1 ? "" : "s"}` }));
    }));
    for (const [name, err] of Object.entries(doc.errors || {})) this.status.append(el("p", { class: "muted", text: err }));
    const seen = new Set();
    for (const name of metrics) {
      const groups = doc.metrics[name];
      if (!groups) continue;
      seen.add(name);
      let c = this.charts.get(name);
      if (!c) {
        const body = el("div", { class: "chart-body" });
        const card = el("div", { class: "chart", dataset: { metric: name, groups: "" } },
          el("div", { class: "chart-head" }, el("h3", { title: name, text: name })), body);
        this.grid.append(card);
        c = { card, chart: new MetricChart(body, { title: name, height: this.height, statLabels: true }) };
        this.charts.set(name, c);
      }
      c.card.dataset.groups = String(groups.length);
      c.chart.setRuns(groups.map((g) => {
        const label = groupLabel(g.key);
        // n once: the readout says how many runs have a value at the step under the cursor (the legend: the group's).
        return { id: `group:${label}`, label, color: colors[label], x: g.x, y: g.y,
          y_min: g.y_min, y_max: g.y_max, band: { lo: g.lo, hi: g.hi }, count: g.count, std: g.std, stat: doc.stat };
      }));
    }
    for (const [name, c] of this.charts) {
      if (!seen.has(name)) { c.chart.destroy(); c.card.remove(); this.charts.delete(name); }
    }
    this.node.dataset.ready = "1";
  }

  destroy() { this.seq++; this.destroyCharts(); }
}
