// The run page's sections for W&B-style values: the strings logged with run.log (text values, by key, at
// their steps) and the logged tables (wandb.Table), whose image cells are drawn as thumbnails and whose
// media cells as players. Their data are the parts "texts" and "tables" of GET /api/runs/{id}
// (tracker/ui/logged.py); an image's bytes come from GET /api/runs/{id}/blobs/{sha256}, a media file's from
// GET /api/runs/{id}/media/{sha256}, which serve only blobs the run names, hash checked.

import { mediaUrl } from "./media.js";
import { object3dViewer } from "./media/object3d.js";
import { box, el, errorBox, fmtNum, fmtValue } from "./util.js";

const THUMB = 64;
// Values of one text key shown, the latest first (tracker query or the API give them all).
const TEXT_ROWS = 20;

function partError(ctx, name) {
  const part = ctx.detail[name];
  return part && !Array.isArray(part) && typeof part === "object" && part.error ? errorBox(`${name}: ${part.error}`) : null;
}

function byName(ctx, name, title) {
  const part = ctx.detail[name];
  if (!part || Array.isArray(part) || part.error) return { fail: partError(ctx, name) && box(title, partError(ctx, name)) };
  return { names: Object.keys(part), part };
}

/** A slider over a list of logged versions (each with a step), the last one first; null for one version. */
function stepSlider(items, label, show) {
  if (items.length < 2) return null;
  const slider = el("input", { type: "range", min: 0, max: items.length - 1, step: 1, value: items.length - 1, "aria-label": label });
  slider.addEventListener("input", () => show(items[Number(slider.value)]));
  return slider;
}

/** Text values: per key, a table of step and value, the latest first (as W&B's history table shows them). */
export function textsSection(ctx) {
  const { fail, names, part } = byName(ctx, "texts", "Text values");
  if (!names) return fail || null;
  if (!names.length) return null;
  const cards = names.map((name) => {
    const items = part[name];
    const rows = items.slice(-TEXT_ROWS).reverse().map((it) => el("tr", {},
      el("td", { class: "num", text: fmtNum(it.step) }), el("td", { class: "text-value", text: it.value })));
    const older = items.length - TEXT_ROWS;
    return el("div", { class: "text-values", dataset: { text: name } },
      el("h3", { text: name, title: name }),
      older > 0 ? el("div", { class: "muted", text: `the last ${TEXT_ROWS} of ${items.length} values` }) : null,
      el("div", { class: "table-wrap" }, el("table", { class: "grid" },
        el("thead", {}, el("tr", {}, el("th", { class: "num", text: "step" }), el("th", { text: "value" }))),
        el("tbody", {}, rows))));
  });
  return box("Text values", el("div", { class: "text-grid" }, cards));
}

function cellNode(ctx, cell) {
  if (cell && typeof cell === "object" && !Array.isArray(cell) && cell._type === "image-file" && typeof cell.sha256 === "string") {
    const scale = THUMB / Math.max(cell.width || 1, cell.height || 1);  // small images up, large ones down
    const src = `/api/runs/${encodeURIComponent(ctx.id)}/blobs/${encodeURIComponent(cell.sha256)}`;
    const img = el("img", { class: "thumb", src, alt: cell.caption || "image", title: cell.caption || `${cell.width}×${cell.height}`,
      width: Math.max(1, Math.round((cell.width || THUMB) * scale)), height: Math.max(1, Math.round((cell.height || THUMB) * scale)) });
    return el("a", { href: src, target: "_blank", rel: "noopener" }, img);
  }
  const media = cell && typeof cell === "object" && !Array.isArray(cell) && typeof cell.sha256 === "string" ? mediaCell(ctx, cell) : null;
  if (media) return media;
  if (cell !== null && typeof cell === "object") return el("span", { class: "mono", text: JSON.stringify(cell) });
  return typeof cell === "number" ? fmtNum(cell) : fmtValue(cell);
}

/**
 * A table cell holding audio, video, a 3D scene or a page (W&B's audio-file, video-file, object3D-file,
 * html-file), from GET /api/runs/{id}/media/{sha256}: a player that loads nothing until played, a page
 * opened sandboxed in its own tab, a 3D view made when asked for.
 */
function mediaCell(ctx, cell) {
  const src = mediaUrl(ctx.id, cell.sha256);
  const title = cell.caption || "";
  switch (cell._type) {
    case "audio-file":
      return el("audio", { class: "cell-audio", controls: true, preload: "none", src, title });
    case "video-file":
      if (cell.format === "gif") return el("img", { class: "thumb", src, alt: title || "video", title });
      return el("video", { class: "cell-video", controls: true, preload: "metadata", playsInline: true, src, title, width: THUMB * 2 });
    case "html-file":
      return el("a", { href: src, target: "_blank", rel: "noopener", title: "opens sandboxed: its scripts cannot reach this page", text: "page ↗" });
    case "object3D-file": {
      const button = el("button", { type: "button", text: `3D · ${fmtNum(cell.points)} points` });
      const holder = el("div", { class: "cell-3d" }, button);
      button.addEventListener("click", () => {
        holder.replaceChildren();
        object3dViewer(holder).show({ ...cell, name: title }, src);
      });
      return holder;
    }
    default:
      return null;
  }
}

/** Logged tables: per name, the rows of the chosen version (the last by default), images as thumbnails. */
export function tablesSection(ctx) {
  const { fail, names, part } = byName(ctx, "tables", "Tables");
  if (!names) return fail || null;
  if (!names.length) return null;
  const cards = names.map((name) => {
    const items = part[name];
    const holder = el("div", { class: "table-wrap" });
    const label = el("div", { class: "muted" });
    const show = (t) => {
      // A column of numbers is right-aligned, its header too, so each value sits under its own header.
      const numeric = t.columns.map((_, i) => t.rows.length > 0 && t.rows.every((r) => r[i] === null || typeof r[i] === "number"));
      const head = el("tr", {}, t.columns.map((c, i) => el("th", { class: numeric[i] ? "num" : null, text: c })));
      const rows = t.rows.map((r) => el("tr", {}, r.map((c, i) => el("td", { class: numeric[i] ? "num" : null }, cellNode(ctx, c)))));
      holder.replaceChildren(el("table", { class: "grid logged-table" }, el("thead", {}, head), el("tbody", {}, rows)));
      const more = t.total > t.rows.length ? ` · first ${t.rows.length} of ${t.total} rows` : ` · ${t.total} row${t.total === 1 ? "" : "s"}`;
      label.textContent = `step ${fmtNum(t.step)}${more}`;
    };
    show(items[items.length - 1]);
    return el("div", { class: "logged", dataset: { table: name } }, el("h3", { text: name, title: name }),
      stepSlider(items, `step of ${name}`, show), label, holder);
  });
  return box("Tables", cards);
}
