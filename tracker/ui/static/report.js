// The page of a report file (`tracker report`, the dashboard's Report buttons): tables and charts drawn from
// the JSON the file carries, with the dashboard's own code (number formats, charts, tables, panels). No server
// and no request: the file's Content-Security-Policy allows none. Every string is set as text.

import { MetricChart } from "./chart.js";
import { configDiff, sectionsNode, useColors } from "./compare.js";
import { GroupCharts, groupColors, groupLabel, meanStdText } from "./groups.js";
import { mediaReportBox } from "./media.js";
import { panelsNode } from "./panels.js";
import { alignDecimals, box, breakable, clear, dot, el, errorBox, fmtDuration, fmtNum, fmtTime, fmtValue, runColors, shortId, statusBadge } from "./util.js";

function label(run) { return `${run.name || shortId(run.id)} · ${shortId(run.id)}`; }

/** A table of rows: head labels, and per row its cells as {text, num, node}. */
function table(head, rows, cls = "") {
  const numeric = head.map((h) => !!h.num);
  const texts = head.map((h, j) => (numeric[j] ? alignDecimals(rows.map((r) => (r[j].node ? "" : r[j].text))) : null));
  return el("div", { class: "table-wrap" }, el("table", { class: `grid ${cls}` },
    el("thead", {}, el("tr", {}, head.map((h) => el("th", { class: h.num ? "num" : "", text: h.text })))),
    el("tbody", {}, rows.map((r, i) => el("tr", { dataset: r.id ? { id: r.id } : {} }, r.map((c, j) => el("td", { class: numeric[j] ? "num" : c.cls || "", title: c.title },
      c.node || (numeric[j] ? texts[j][i] : c.text))))))));
}

function runsTable(data, colors) {
  const anyGroup = data.runs.some((r) => r.group);
  const head = [{ text: "name" }, { text: "id" }, { text: "project" }, ...(anyGroup ? [{ text: "group" }] : []), { text: "status" },
    { text: "started" }, { text: "duration", num: true }, { text: "step", num: true }];
  for (const m of data.metrics) head.push({ text: `${m} last`, num: true }, { text: `${m} min`, num: true });
  const rows = data.runs.map((r) => {
    const row = [{ node: el("span", { class: "run-name" }, dot(colors[r.id]), r.name || shortId(r.id)) }, { text: shortId(r.id), cls: "mono" },
      { text: r.project || "" }, ...(anyGroup ? [{ text: r.group || "" }] : []),
      { node: statusBadge(r.status), title: r.error ? `${r.error.type}: ${r.error.message}` : undefined },
      { text: fmtTime(r.created_at) }, { text: fmtDuration(r.duration) }, { text: fmtNum(r.last_step) }];
    for (const m of data.metrics) {
      const s = r.stats[m] || {};
      row.push({ text: fmtNum(r.last_metrics[m] ?? s.last) }, { text: fmtNum(s.min) });
    }
    row.id = r.id;
    return row;
  });
  return table(head, rows, "report-runs");
}

/** Why each failed (or crashed) run ended: its error's type and message, on the page and in print. */
function errorsBox(data, colors) {
  const failed = data.runs.filter((r) => r.error && (r.error.type || r.error.message));
  if (!failed.length) return null;
  return box(failed.length === 1 ? "Error" : `Errors (${failed.length} runs)`, el("ul", { class: "report-errors" }, failed.map((r) =>
    el("li", { dataset: { id: r.id } }, el("span", { class: "run-name" }, dot(colors[r.id]), label(r)), " ", statusBadge(r.status), " ",
      el("span", { class: "error-text mono" }, el("strong", { text: r.error.type || "error" }), r.error.message ? `: ${r.error.message}` : "")))));
}

function groupsTable(data, colors) {
  const head = [{ text: `group by ${data.by}` }, { text: "runs", num: true }, ...data.metrics.map((m) => ({ text: `${m} last (mean ± std)`, num: true }))];
  const rows = data.groups.map((g) => {
    const lab = groupLabel(g.key);
    const row = [{ node: el("span", { class: "group-label" }, dot(colors[lab]), lab) }, { text: String(g.n) },
      ...data.metrics.map((m) => ({ text: meanStdText(g.metrics[m], g.n) }))];
    row.id = `group:${lab}`;
    return row;
  });
  return table(head, rows, "report-groups");
}

function runCharts(data, colors) {
  const grid = el("div", { class: "charts" });
  const charts = [];
  for (const m of data.metrics) {
    const series = data.series[m] || [];
    if (!series.length) continue;
    const body = el("div", { class: "chart-body" });
    const log = el("input", { type: "checkbox", "aria-label": `${m}: log scale` });
    grid.append(el("div", { class: "chart", dataset: { metric: m } },
      el("div", { class: "chart-head" }, el("h3", { title: m }, breakable(m)), el("span", { class: "grow" }), el("label", { class: "muted" }, log, " log")), body));
    const runs = data.runs.filter((r) => series.some((s) => s.id === r.id));
    const byId = Object.fromEntries(series.map((s) => [s.id, s]));
    charts.push(() => {
      const chart = new MetricChart(body, { title: m, statLabels: true });
      chart.setRuns(runs.map((r) => ({ id: r.id, label: label(r), color: colors[r.id], ...byId[r.id] })));
      log.addEventListener("change", () => chart.setOptions({ log: log.checked }));
    });
  }
  return { node: grid, draw: () => charts.forEach((f) => f()) };
}

function environmentTable(data) {
  const head = [{ text: "run" }, { text: "host" }, { text: "command" }, { text: "working directory" }, { text: "git commit" }, { text: "python" }];
  const rows = data.runs.map((r) => {
    const e = data.environment[r.id] || {};
    return [{ text: label(r) }, { text: e.host || "–" }, { text: e.command || "–", cls: "mono" }, { text: e.cwd || "–", cls: "mono" },
      { text: e.git_commit ? e.git_commit.slice(0, 12) : "–", cls: "mono" }, { text: e.python || "–" }];
  });
  return table(head, rows, "report-env");
}

/** The sweep the runs are the trials of: its best value, the trial and run that reached it, and its parameters. */
function sweepBox(data, colors) {
  const s = data.sweep;
  const head = el("p", { class: "muted" }, `sweep `, el("span", { class: "mono", text: s.id }), s.name ? ` ${s.name}` : "",
    s.method ? ` · ${s.method}` : "", s.trials !== undefined ? ` · ${s.trials} trial${s.trials === 1 ? "" : "s"}` : "");
  if (s.error) return box("Sweep", head, el("p", { class: "error-line", dataset: { part: "sweep-best" }, text: `cannot read the sweep: ${s.error}` }));
  if (!s.metric) return box("Sweep", head, el("p", { class: "muted", dataset: { part: "sweep-best" }, text: "This sweep has no metric: no best trial." }));
  if (!s.best) return box("Sweep", head, el("p", { class: "muted", dataset: { part: "sweep-best" }, text: `No finished trial yet: no best ${s.metric}.` }));
  const b = s.best;
  const run = data.runs.find((r) => r.id === b.run_id);
  const params = Object.entries(b.params || {}).map(([k, v]) => `${k}=${fmtValue(v)}`).join(", ");
  return box("Sweep", head, el("p", { class: "sweep-best", dataset: { part: "sweep-best" } },
    el("strong", { text: `best ${s.metric} ${fmtNum(b.value)}` }), ` (${s.goal || "minimize"}) · trial #${b.trial}`,
    b.run_id ? el("span", {}, " · run ", dot(colors[b.run_id] || "#888"), run && run.name ? `${run.name} ` : "", el("span", { class: "mono", text: shortId(b.run_id) })) : "",
    params ? ` · ${params}` : ""));
}

function panelsSection(data) {
  const runs = Object.fromEntries(data.runs.map((r) => [r.id, r]));
  const parts = data.panels.map((p, i) => {
    const details = el("details", { class: "report-panels", open: i === 0, dataset: { run: p.id } }, el("summary", { text: label(runs[p.id] || { id: p.id }) }));
    let drawn = false;
    const draw = () => { if (details.open && !drawn) { drawn = true; details.append(panelsNode(p.panels)); } };
    details.addEventListener("toggle", draw);
    requestAnimationFrame(draw);
    return details;
  });
  if (data.panels_left_out) parts.push(el("p", { class: "muted", text: `Panels of the first ${data.panels.length ? "runs" : "runs"} only: ${data.panels_left_out} more runs are left out.` }));
  return box("Plugin panels", ...parts);
}

function main() {
  const data = JSON.parse(document.getElementById("report-data").textContent);
  const root = document.getElementById("report");
  clear(root);
  const colors = runColors(data.runs.map((r) => r.id));
  useColors(colors);
  const meta = [`${fmtNum(data.runs.length)} run${data.runs.length === 1 ? "" : "s"}`];
  if (data.by) meta.push(`grouped by ${data.by}`);
  if (data.metrics.length) meta.push(`metrics: ${data.metrics.join(", ")}`);
  meta.push(`written ${fmtTime(data.generated_at)}`);
  document.getElementById("report-meta").textContent = meta.join(" · ");
  const later = [];
  if (data.sweep) root.append(sweepBox(data, colors));
  if (data.by) {
    const labels = data.groups.map((g) => groupLabel(g.key));
    const gcolors = groupColors(labels);
    root.append(box("Groups", groupsTable(data, gcolors)));
    root.append(errorsBox(data, colors) || "");
    const node = el("section", { class: "box group-box" });
    root.append(node);
    later.push(() => new GroupCharts(node, { title: "Metrics: mean ± std per group", height: 240 }).draw({ groups: data.groups.map((g) => ({ key: g.key, n: g.n })),
      metrics: data.aggregates, errors: data.errors, stat: "mean", band: "std", runs: data.runs.length }, data.metrics));
    root.append(el("details", { class: "box report-runs-box" }, el("summary", { text: `The ${data.runs.length} runs` }), runsTable(data, colors)));
  } else {
    root.append(box("Runs", runsTable(data, colors)));
    root.append(errorsBox(data, colors) || "");
    const charts = runCharts(data, colors);
    root.append(box("Metrics", el("p", { class: "muted", text: "Each run's line is its values downsampled; the faint band is each bucket's min and max. Drag to zoom, double-click to reset." }), charts.node));
    later.push(charts.draw);
  }
  if (data.media) {
    const media = mediaReportBox(data.media, data.runs, (id) => colors[id]);
    if (media) { root.append(media.node); later.push(media.start); }
  }
  if (data.runs.length > 1) root.append(configDiff({ runs: data.runs, config_diff: data.config_diff, config_same: data.config_same }));
  if (data.sections.length) root.append(sectionsNode({ runs: data.runs, sections: data.sections }));
  else if (data.summaries_left_out) root.append(box("Summaries", el("p", { class: "muted", text: `Summaries side by side are shown for at most 20 runs; this report holds ${data.runs.length}.` })));
  if (data.panels.length) root.append(panelsSection(data));
  if (data.environment) root.append(box("Environment", environmentTable(data)));
  // Charts need their width: drawn once the sections are in the page.
  requestAnimationFrame(() => {
    for (const f of later) {
      try { f(); } catch (err) { root.append(errorBox(`cannot draw: ${err.message}`)); }
    }
    document.body.dataset.ready = "1";
  });
}

try { main(); } catch (err) {
  const root = document.getElementById("report");
  root.append(errorBox(`this report cannot be shown: ${err.message}`));
}
