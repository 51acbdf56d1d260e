// The run page's capture sections: artifacts (with downloads), image galleries, system charts.
// Their data are parts of GET /api/runs/{id} (tracker/capture/web.py); bytes come from
// GET /api/runs/{id}/blobs/{sha256}, which serves only blobs the run names, hash checked.

import { figureNode } from "./panels.js";
import { box, el, errorBox, fmtBytes, fmtNum, fmtTime } from "./util.js";

export { fmtBytes };

function partError(ctx, name) {
  const part = ctx.detail[name];
  return part && !Array.isArray(part) && typeof part === "object" && part.error ? errorBox(`${name}: ${part.error}`) : null;
}

function blobUrl(ctx, sha, download) {
  return `/api/runs/${encodeURIComponent(ctx.id)}/blobs/${encodeURIComponent(sha)}${download ? "?download=1" : ""}`;
}

/** Artifacts: name, kind, size, sha256 prefix, step; a download link for what the store holds. */
export function artifactsSection(ctx) {
  const list = ctx.detail.artifacts;
  if (!Array.isArray(list)) return partError(ctx, "artifacts") && box("Artifacts", partError(ctx, "artifacts"));
  if (!list.length) return null;
  const head = el("tr", {}, ["name", "kind", "size", "sha256", "step", "logged", ""].map((c) => el("th", { text: c })));
  const rows = [];
  for (const a of list) {
    let link;
    if (a.reference) link = el("span", { class: "muted", text: "reference (not in the store)" });
    else if (a.folder) link = el("span", { class: "muted", text: `folder of ${a.files} file${a.files === 1 ? "" : "s"}` });
    else link = el("a", { href: blobUrl(ctx, a.sha256, true), download: a.name, class: "download", text: "download" });
    // A version of a named artifact links to its page (artifacts.js).
    const name = a.version ? el("td", {}, el("a", { href: `/artifacts/${encodeURIComponent(a.qualified)}/${encodeURIComponent(a.version)}`,
      "data-link": true, text: `${a.name}:${a.version}` })) : el("td", { text: a.name });
    rows.push(el("tr", { dataset: { artifact: a.name } },
      name, el("td", { text: a.kind }), el("td", { class: "num", text: fmtBytes(a.size) }),
      el("td", { class: "mono", title: a.sha256, text: a.sha256.slice(0, 12) }), el("td", { class: "num", text: fmtNum(a.step) }),
      el("td", { text: fmtTime(a.time) }), el("td", {}, link)));
    if (a.folder && Array.isArray(a.members) && !a.reference) {
      const items = a.members.map((m) => el("li", {},
        el("a", { href: blobUrl(ctx, m.sha256, true), download: m.path.split("/").pop(), text: m.path }),
        el("span", { class: "muted", text: ` · ${fmtBytes(m.size)}` })));
      rows.push(el("tr", { class: "members" }, el("td", { colspan: 7 },
        el("details", {}, el("summary", { text: `files of ${a.name}` }), el("ul", {}, items)))));
    }
  }
  return box("Artifacts", el("div", { class: "table-wrap" }, el("table", { class: "grid artifacts" }, el("thead", {}, head), el("tbody", {}, rows))));
}

/** One gallery per image name: the image at the chosen step, a slider over the steps. */
export function imagesSection(ctx) {
  const byName = ctx.detail.images;
  if (!byName || Array.isArray(byName) || byName.error) return partError(ctx, "images") && box("Images", partError(ctx, "images"));
  const names = Object.keys(byName);
  if (!names.length) return null;
  const galleries = names.map((name) => {
    const items = byName[name];
    const img = el("img", { alt: name, class: "gallery-image" });
    const label = el("div", { class: "muted gallery-label" });
    const slider = el("input", { type: "range", min: 0, max: items.length - 1, step: 1, value: items.length - 1, "aria-label": `step of ${name}` });
    const show = () => {
      const it = items[Number(slider.value)];
      img.src = blobUrl(ctx, it.sha256, false);
      img.width = it.width;
      img.height = it.height;
      // A caption that only repeats the step ("step 199") is not written twice.
      const step = `step ${fmtNum(it.step)}`;
      const caption = it.caption && it.caption.trim() !== step && it.caption.trim() !== String(it.step) ? ` · ${it.caption}` : "";
      label.textContent = `${step}${caption} · ${it.width}×${it.height}`;
    };
    slider.addEventListener("input", show);
    show();
    return el("figure", { class: "gallery", dataset: { image: name } }, el("figcaption", { text: name }),
      el("div", { class: "gallery-frame" }, img), items.length > 1 ? slider : null, label);
  });
  return box("Images", el("div", { class: "galleries" }, galleries));
}

/** System metrics: one chart per figure (CPU, memory, disk, network; per GPU). */
export function systemSection(ctx) {
  const figs = ctx.detail.system;
  if (!Array.isArray(figs)) return partError(ctx, "system") && box("System", partError(ctx, "system"));
  if (!figs.length) return null;
  return box("System", el("div", { class: "figures system" }, figs.map(figureNode)));
}
