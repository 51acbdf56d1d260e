// Alerts on the dashboard: the run page's section (part "alerts" of GET /api/runs/{id}) and the runs list's
// badge (the "alerts" count of each row of GET /api/runs). User strings are set as text, never as HTML.

import { box, el, errorBox, fmtNum, fmtTime } from "./util.js";

/** The badge next to a run's name in the runs list: how many alerts it holds (the run page lists them). */
export function alertBadge(r) {
  const n = Number(r.alerts) || 0;
  return el("span", { class: "alert-badge", "data-alerts": n,
    title: `${n} alert${n === 1 ? "" : "s"}`, "aria-label": `${n} alert${n === 1 ? "" : "s"}`, text: `⚠ ${n}` });
}

/** Every alert of the run, oldest first: level, title, text, sent or suppressed, step, time, condition. */
export function alertsSection(ctx) {
  const list = ctx.detail.alerts;
  if (!Array.isArray(list)) {
    const err = list && list.error ? list.error : "no data";
    return box("Alerts", errorBox(`alerts: ${err}`));
  }
  if (!list.length) return null;
  // What it says first (level, title, text), when last: a phone shows the first columns.
  const head = el("tr", {}, ["level", "title", "text", "sent", "step", "time", "condition"].map((c) => el("th", { text: c })));
  const rows = list.map((a) => el("tr", { class: `alert-${String(a.level).toLowerCase()}`, dataset: { alert: a.title } },
    el("td", {}, el("span", { class: `alert-level level-${String(a.level).toLowerCase()}`, text: a.level })),
    el("td", { text: a.title }), el("td", { class: "alert-text", text: a.text }),
    el("td", { text: a.suppressed ? "suppressed" : "sent" }), el("td", { class: "num", text: fmtNum(a.step) }),
    el("td", { text: fmtTime(a.time) }), el("td", { class: "muted", text: a.condition || "run.alert()" })));
  const node = box("Alerts", el("div", { class: "table-wrap" }, el("table", { class: "grid alerts" }, el("thead", {}, head), el("tbody", {}, rows))));
  node.id = "alerts";
  return node;
}
