// The lineage view: runs as rounded boxes in their colours, versions of artifacts as pills, arrows from the
// run that made a version to it and from a version to the runs that used it; left to right in the order
// things happened; every box a link (a run opens its page, a version its page). Data: GET /api/lineage.

import { api, box, clear, el, errorBox, loading, runColor, shortId } from "./util.js";

const SVG = "http://www.w3.org/2000/svg";
const RUN_W = 160, RUN_H = 46, VER_W = 160, VER_H = 34, COL_GAP = 40, ROW_GAP = 14, PAD = 8;

function s(tag, attrs = {}, ...kids) {
  const n = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) n.setAttribute(k, String(v));
  for (const c of kids) n.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return n;
}

function clip(text, n) {
  text = String(text ?? "");
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

/** Where a node leads: a run's page, or a version's page. */
export function nodeHref(n) {
  if (n.kind === "run") return `/runs/${encodeURIComponent(n.run)}`;
  return `/artifacts/${encodeURIComponent(n.qualified)}/${encodeURIComponent(n.version)}`;
}

/**
 * Columns by the longest path from the graph's sources (so every arrow points right), and within a
 * column by time. Returns {nodes: [{...node, x, y, w, h}], width, height}.
 */
export function layout(graph) {
  const nodes = graph.nodes.map((n) => ({ ...n }));
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const outs = new Map(nodes.map((n) => [n.id, []]));
  const indeg = new Map(nodes.map((n) => [n.id, 0]));
  for (const e of graph.edges) {
    if (!byId.has(e.from) || !byId.has(e.to) || e.from === e.to) continue;
    outs.get(e.from).push(e.to);
    indeg.set(e.to, indeg.get(e.to) + 1);
  }
  const rank = new Map(nodes.map((n) => [n.id, 0]));
  const queue = nodes.filter((n) => indeg.get(n.id) === 0).map((n) => n.id);
  const seen = new Set();
  while (queue.length) {
    const id = queue.shift();
    seen.add(id);
    for (const to of outs.get(id)) {
      rank.set(to, Math.max(rank.get(to), rank.get(id) + 1));
      indeg.set(to, indeg.get(to) - 1);
      if (indeg.get(to) === 0) queue.push(to);
    }
  }
  // A circle (a run that used what it made): its members stay where the walk left them.
  const when = (n) => (n.kind === "run" ? n.created_at : n.time) ?? 0;
  const columns = [];
  for (const n of nodes) {
    const r = rank.get(n.id);
    (columns[r] ||= []).push(n);
  }
  let height = 0;
  columns.forEach((col, i) => {
    col.sort((a, b) => when(a) - when(b) || String(a.id).localeCompare(String(b.id)));
    let y = PAD;
    for (const n of col) {
      n.w = n.kind === "run" ? RUN_W : VER_W;
      n.h = n.kind === "run" ? RUN_H : VER_H;
      n.x = PAD + i * (RUN_W + COL_GAP);
      n.y = y;
      y += n.h + ROW_GAP;
    }
    height = Math.max(height, y);
  });
  // Centre shorter columns against the tallest one.
  for (const col of columns) {
    if (!col) continue;
    const used = col.reduce((a, n) => a + n.h + ROW_GAP, 0);
    const shift = (height - PAD - used) / 2;
    for (const n of col) n.y += Math.max(0, shift);
  }
  return { nodes, byId, width: PAD * 2 + columns.length * RUN_W + Math.max(0, columns.length - 1) * COL_GAP, height: height + PAD };
}

/** The graph drawn as an SVG; `navigate(href)` is called when a box is clicked (or Enter pressed on it). */
export function lineageView(graph, navigate) {
  const lay = layout(graph);
  const svg = s("svg", { class: "lineage-svg", width: lay.width, height: lay.height, viewBox: `0 0 ${lay.width} ${lay.height}`,
    role: "img", "aria-label": "lineage: runs and the versions they made and used" });
  const defs = s("defs", {}, s("marker", { id: "lineage-arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" },
    s("path", { d: "M0,0 L10,5 L0,10 z", class: "lineage-arrowhead" })));
  svg.append(defs);
  for (const e of graph.edges) {
    const a = lay.byId.get(e.from), b = lay.byId.get(e.to);
    if (!a || !b) continue;
    const x1 = a.x + a.w, y1 = a.y + a.h / 2, x2 = b.x, y2 = b.y + b.h / 2;
    const mid = (x1 + x2) / 2;
    const path = s("path", { d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2 - 2},${y2}`, class: `lineage-edge edge-${e.kind}`,
      "marker-end": "url(#lineage-arrow)", "data-from": e.from, "data-to": e.to });
    path.append(s("title", {}, `${e.kind}`));
    svg.append(path);
  }
  for (const n of lay.nodes) {
    const href = nodeHref(n);
    const link = s("a", { href, class: `lineage-node node-${n.kind}${n.id === graph.root ? " root" : ""}`, "data-node": n.id, tabindex: 0 });
    const go = (ev) => { ev.preventDefault(); navigate(href); };
    link.addEventListener("click", (ev) => { if (ev.button === 0 && !ev.metaKey && !ev.ctrlKey && !ev.shiftKey) go(ev); });
    link.addEventListener("keydown", (ev) => { if (ev.key === "Enter") go(ev); });
    if (n.kind === "run") {
      // Each run in its own colour, as on its run page (the boxes carry names; no set to spread them over).
      const color = runColor(n.run);
      const rect = s("rect", { x: n.x, y: n.y, width: n.w, height: n.h, rx: 9, class: "lineage-run" });
      rect.style.stroke = color;
      const bar = s("rect", { x: n.x, y: n.y, width: 6, height: n.h, rx: 3, class: "lineage-run-bar" });
      bar.style.fill = color;
      link.append(rect, bar,
        s("text", { x: n.x + 14, y: n.y + 19, class: "lineage-title" }, clip(n.name || shortId(n.run), 19)),
        s("text", { x: n.x + 14, y: n.y + 36, class: "lineage-sub" }, `${shortId(n.run)} · ${n.status || ""}`),
        s("title", {}, `run ${n.run}${n.name ? ` (${n.name})` : ""}${n.project ? `, project ${n.project}` : ""}, ${n.status || ""}`));
    } else {
      const aliases = (n.aliases || []).join(", ");
      link.append(s("rect", { x: n.x, y: n.y, width: n.w, height: n.h, rx: n.h / 2, class: "lineage-version" }),
        s("text", { x: n.x + 14, y: n.y + 14, class: "lineage-title" }, clip(`${n.name}:${n.version}`, 20)),
        s("text", { x: n.x + 14, y: n.y + 27, class: "lineage-sub" }, clip(aliases ? `${n.type} · ${aliases}` : n.type, 24)),
        s("title", {}, `${n.qualified}:${n.version} (${n.type})${aliases ? ` [${aliases}]` : ""}, sha256 ${n.sha256}`));
    }
    svg.append(link);
  }
  const view = el("div", { class: "lineage", dataset: { root: graph.root } }, svg);
  // On a narrow screen the root is scrolled into view once the drawing is in the page.
  const root = lay.byId.get(graph.root);
  if (root) requestAnimationFrame(() => { view.scrollLeft = Math.max(0, root.x + root.w / 2 - view.clientWidth / 2); });
  return view;
}

/** A "Lineage" section that loads GET /api/lineage?ref=... and draws it. */
export function lineageBox(ref, navigate, { depth = 3, title = "Lineage" } = {}) {
  const body = el("div", {}, loading("Loading the lineage…"));
  const node = box(title, body);
  node.dataset.section = "lineage";
  api("/api/lineage", { ref, depth }).then((graph) => {
    clear(body);
    if (graph.edges.length === 0) {
      body.append(el("p", { class: "muted", text: "Nothing used or made: no artifact of another run leads here." }));
      return;
    }
    body.append(lineageView(graph, navigate),
      el("p", { class: "muted lineage-legend", text: `${depth} step${depth === 1 ? "" : "s"} up and down · boxes are runs, pills are versions; click one to open it` }));
  }).catch((err) => { clear(body).append(errorBox(`cannot load the lineage: ${err.message}`)); });
  return node;
}
