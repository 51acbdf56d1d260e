// What the media viewers share: the bytes of a source (a URL of the app, or a report's data: URI decoded
// here, so a report asks for nothing), the line of facts under a viewer, and the note of a file left out.

import { el, fmtBytes } from "../util.js";

/** The bytes at `src`: a data: URI is decoded in place (no request), anything else fetched. */
export async function bytesOf(src, { signal } = {}) {
  if (src.startsWith("data:")) {
    const comma = src.indexOf(",");
    const head = src.slice(5, comma);
    const body = src.slice(comma + 1);
    if (!/;base64$/i.test(head)) return new TextEncoder().encode(decodeURIComponent(body)).buffer;
    const bin = atob(body);
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out.buffer;
  }
  const resp = await fetch(src, { signal });
  if (!resp.ok) {
    let msg = `HTTP ${resp.status}`;
    try { const body = await resp.json(); if (body && body.error) msg = body.error; } catch { /* not JSON */ }
    throw new Error(msg);
  }
  return resp.arrayBuffer();
}

/**
 * Why a player could not load `src`: the server's own message when it answered with an error (a damaged
 * or missing file, a bucket out of reach), else that the browser cannot play the file.
 */
export async function failure(src, what) {
  if (src && !src.startsWith("data:")) {
    try {
      const resp = await fetch(src, { headers: { range: "bytes=0-0" } });
      if (!resp.ok) {
        let msg = `HTTP ${resp.status}`;
        try { const body = await resp.json(); if (body && body.error) msg = body.error; } catch { /* not JSON */ }
        return `cannot load the ${what}: ${msg}`;
      }
    } catch (err) { return `cannot load the ${what}: ${err.message}`; }
  }
  return `this browser cannot play the ${what}`;
}

/** The facts line under a viewer: the parts given, joined; the caption (as text) last, in quotes. */
export function metaLine(parts, caption) {
  const line = el("div", { class: "media-meta muted" }, parts.filter(Boolean).join(" · "));
  if (caption) line.append(parts.length ? " · " : "", el("span", { class: "media-caption", text: `“${caption}”` }));
  return line;
}

/** A report's note for a file that was too big to carry: what it was and why it is not here. */
export function leftOutNote(rec, what) {
  const size = typeof rec.left_out === "number" ? ` (${fmtBytes(rec.left_out)})` : "";
  return el("p", { class: "media-left-out muted", dataset: { leftOut: "1" },
    text: `The ${what}${size} is left out of this report: it is larger than the report's --max-media-bytes. Open the run in the dashboard to ${what === "page" ? "see" : "play"} it.` });
}
