// Plugin panels: figure specs from GET /api/runs/{id}/panels drawn as charts and tables.

import { textNodes } from "./ansi.js";
import { barFigure, heatmapFigure, lineFigure } from "./figures.js";
import { alignDecimals, el, errorBox, fmtRowCell, paletteColor, rowUnit } from "./util.js";

const isNumber = (v) => typeof v === "number" || v === "NaN" || v === "Infinity" || v === "-Infinity";

/**
 * A table of {columns, rows, notes}: numbers right-aligned in tabular figures under right-aligned headers,
 * each cell as its column's unit says, and a column's decimal points one under the other (as the CLI).
 */
export function tableNode(columns, rows, notes = []) {
  const numericCol = columns.map((c) => rows.some((r) => isNumber(r[c])) && rows.every((r) => r[c] === null || r[c] === undefined || isNumber(r[c])));
  const units = rows.map(rowUnit);
  const texts = columns.map((c, j) => {
    const col = rows.map((r, i) => fmtRowCell(c, r[c], units[i]));
    return numericCol[j] ? alignDecimals(col) : col;
  });
  const head = el("tr", {}, columns.map((c, j) => el("th", { class: numericCol[j] ? "num" : "", text: c })));
  // Text a run printed (the console summary's last line) keeps its colours, as in the Logs panel.
  const body = rows.map((r, i) => el("tr", {}, columns.map((c, j) => el("td", { class: isNumber(r[c]) || numericCol[j] ? "num" : "" }, ...textNodes(texts[j][i])))));
  const wrap = el("div", { class: "table-wrap" }, el("table", { class: "grid" }, el("thead", {}, head), el("tbody", {}, body)));
  return el("div", {}, wrap, notes.length ? el("ul", { class: "notes" }, notes.map((n) => el("li", { text: n }))) : null);
}

const DRAW = {
  line: (node, fig) => lineFigure(node, fig, paletteColor),
  heatmap: (node, fig) => heatmapFigure(node, fig),
  bar: (node, fig) => barFigure(node, fig, paletteColor),
  table: (node, fig) => node.append(tableNode(fig.columns, fig.rows, fig.notes)),
};

/** One figure in a card; a figure of an unknown type or one that fails says so. */
export function figureNode(fig) {
  const card = el("figure", { class: `figure fig-${fig.type}${fig.wide ? " wide" : ""}`, dataset: { type: fig.type } });
  card.append(el("figcaption", { text: fig.title || "" }));
  const body = el("div", { class: "figure-body" });
  card.append(body);
  const draw = DRAW[fig.type];
  if (!draw) {
    body.append(errorBox(`unknown figure type ${JSON.stringify(fig.type)}`));
    return card;
  }
  // Drawn once the card is in the page (charts need their width).
  requestAnimationFrame(() => {
    try { draw(body, fig); } catch (err) { body.append(errorBox(`cannot draw: ${err.message}`)); }
  });
  return card;
}

/** One panel: a heading (title, plugin, schema), its figures, or its error. */
export function panelNode(p) {
  return el("section", { class: "panel", dataset: { panel: p.name, state: p.error ? "error" : "done" } },
    el("h3", {}, p.title, el("span", { class: "muted", text: ` · ${p.plugin || "?"} · ${p.schema}` })),
    p.error ? errorBox(`panel ${p.name} failed: ${p.error}`)
      : el("div", { class: "figures" }, p.figures.map(figureNode)));
}

/** Every panel of a run. */
export function panelsNode(panels) {
  return el("div", { class: "panels" }, panels.map(panelNode));
}
