// The Report button of the runs, compare and sweep pages: GET /api/report for what the page shows, saved as
// a file (the server sends it as an attachment; the page fetches it and hands the browser the bytes to save,
// so the report never runs inside the app).

import { el } from "./util.js";

/** The file name the server gave (content-disposition), else "report.html". */
function fileName(resp) {
  const m = /filename="([^"]+)"/.exec(resp.headers.get("content-disposition") || "");
  return m ? m[1] : "report.html";
}

/**
 * A "report" button and its status line. `params()` gives the query of /api/report for what is on screen:
 * runs (ids) or the runs page's filters, by, metrics, title.
 */
export function reportButton(params) {
  const note = el("span", { class: "muted report-note", role: "status" });
  const button = el("button", { type: "button", class: "report-button", title: "download one HTML file of what this page shows (opens anywhere, offline)", text: "report" });
  button.addEventListener("click", async () => {
    const url = new URL("/api/report", location.origin);
    for (const [k, v] of Object.entries(params())) {
      if (v === undefined || v === null || v === "") continue;
      if (Array.isArray(v)) v.forEach((x) => url.searchParams.append(k, x)); else url.searchParams.set(k, v);
    }
    button.disabled = true;
    note.textContent = "writing the report…";
    try {
      const resp = await fetch(url, { cache: "no-store" });
      if (!resp.ok) {
        let msg = `HTTP ${resp.status}`;
        try { msg = (await resp.json()).error || msg; } catch { /* not JSON */ }
        throw new Error(msg);
      }
      const blob = await resp.blob();
      // Never put in the page: the app's router, which takes the page's link clicks, never sees this one.
      const a = el("a", { href: URL.createObjectURL(blob), download: fileName(resp) });
      a.click();
      setTimeout(() => URL.revokeObjectURL(a.href), 60_000);
      note.textContent = `saved ${a.download} (${(blob.size / 1e6).toFixed(2)} MB)`;
    } catch (err) {
      note.textContent = `cannot write the report: ${err.message}`;
    } finally {
      button.disabled = false;
    }
  });
  return el("span", { class: "report-action" }, button, note);
}
