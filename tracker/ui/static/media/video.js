// The video viewer: the browser's player over the served file (Range requests, so it seeks without loading
// the whole file), or the image of a gif; a report shows the poster frame of a video it left out.

import { clear, el, fmtDuration } from "../util.js";
import { failure, leftOutNote, metaLine } from "./common.js";

export function videoViewer(container) {
  const wrap = el("div", { class: "media-video" });
  const meta = el("div");
  container.append(wrap, meta);
  let node = null;

  function drop() {
    const old = node;
    node = null;  // first: the old element's error (its src removed below) is no longer this viewer's
    if (old && old.tagName === "VIDEO") { old.pause(); old.removeAttribute("src"); old.load(); }
    if (old) old.remove();
    for (const p of wrap.querySelectorAll("p.error")) p.remove();
  }

  return {
    show(rec, src) {
      drop();
      delete wrap.dataset.duration;
      wrap.dataset.state = "loading";
      const size = rec.width && rec.height ? `${rec.width}×${rec.height}` : "";
      const facts = [Number.isFinite(rec.fps) ? `${+rec.fps.toFixed(2)} fps` : "", size,
        Number.isFinite(rec.frames) ? `${rec.frames} frames` : "", Number.isFinite(rec.duration_s) ? fmtDuration(rec.duration_s) : "", rec.format || ""];
      clear(meta).append(metaLine(facts, rec.caption));
      if (!src) {
        if (rec.poster) {
          node = el("img", { class: "media-poster", alt: `first frame of ${rec.name || "the video"}`, src: rec.poster });
          wrap.append(node);
        }
        wrap.dataset.state = "left-out";
        meta.append(leftOutNote(rec, "video"));
        return;
      }
      if (rec.format === "gif") {
        node = el("img", { class: "media-gif", alt: rec.name || "gif", src });
        if (rec.width) node.style.width = `${Math.max(rec.width, Math.min(256, rec.width * 4))}px`;
        node.addEventListener("load", () => { wrap.dataset.state = "ready"; });
        node.addEventListener("error", () => failure(src, "video").then((text) => {
          wrap.dataset.state = "error";
          wrap.append(el("p", { class: "error", role: "alert", text }));
        }));
      } else {
        node = el("video", { controls: true, preload: "metadata", playsInline: true, class: "media-video-el" });
        // A small video (a 64x64 rollout) is drawn larger, its pixels kept sharp, so its controls fit.
        if (rec.width && rec.height) node.style.width = `${Math.max(rec.width, Math.min(256, rec.width * 4))}px`;
        node.addEventListener("loadedmetadata", () => { wrap.dataset.duration = String(node.duration); wrap.dataset.state = "ready"; });
        const shown = node;
        node.addEventListener("error", () => failure(src, "video").then((text) => {
          if (node !== shown) return;
          wrap.dataset.state = "error";
          wrap.append(el("p", { class: "error", role: "alert", text }));
        }));
        node.src = src;
      }
      wrap.append(node);
    },
    destroy() { drop(); wrap.remove(); meta.remove(); },
  };
}
