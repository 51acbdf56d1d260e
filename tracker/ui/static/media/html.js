// The HTML viewer: the page in an <iframe sandbox="allow-scripts"> (never allow-same-origin), so its
// scripts run in an opaque origin and cannot touch the dashboard; the server serves it with a CSP sandbox
// too (tracker/ui/media.py). A report writes it into the frame's srcdoc, under the report's own policy.

import { clear, el, fmtBytes } from "../util.js";
import { bytesOf, leftOutNote, metaLine } from "./common.js";

export function htmlViewer(container) {
  const frame = el("iframe", { class: "media-html", sandbox: "allow-scripts", referrerpolicy: "no-referrer", loading: "lazy", title: "logged HTML (sandboxed)" });
  const meta = el("div");
  container.append(frame, meta);
  let seq = 0;
  return {
    show(rec, src) {
      const my = ++seq;
      clear(meta).append(metaLine([Number.isFinite(rec.size) ? fmtBytes(rec.size) : "", "sandboxed: its scripts cannot reach this page"], rec.caption));
      frame.removeAttribute("srcdoc");
      if (!src) { frame.hidden = true; meta.append(leftOutNote(rec, "page")); return; }
      frame.hidden = false;
      if (src.startsWith("data:")) {
        // A report: the page as the frame's document (sandboxed; the report's policy forbids any request).
        bytesOf(src).then((buf) => { if (my === seq) frame.srcdoc = new TextDecoder().decode(buf); });
      } else frame.src = src;
    },
    destroy() { seq++; frame.remove(); meta.remove(); },
  };
}
