// The run page's Logs panel: what the run printed, stdout and stderr told apart, ANSI colours rendered,
// search, line numbers, the newest lines followed while the run is live (incremental: GET
// /api/runs/{id}/console?since=CURSOR). A virtual list: only the lines in view are in the DOM, so 100,000
// lines scroll smoothly. Long lines wrap: each line's rows are counted from its length in a monospace font,
// and the lines in view are laid out in normal flow, so a wrong count never makes two lines overlap.

import { ansiNodes, plainText } from "./ansi.js";
import { api, box, clear, el, errorBox, fmtNum, loading } from "./util.js";

const POLL_MS = 1000;
/** Lines drawn above and below the ones in view. */
const OVERSCAN = 30;

/** Columns a line takes in a monospace font: tabs to the next multiple of 8, wide characters two. */
function columns(text) {
  if (!/[^\x20-\x7e]/.test(text)) return text.length;  // printable ASCII: one column each
  const t = plainText(text);
  let n = 0;
  for (const ch of t) {
    if (ch === "\t") n += 8 - (n % 8);
    else {
      const cp = ch.codePointAt(0);
      n += (cp >= 0x1100 && (cp <= 0x115f || (cp >= 0x2e80 && cp <= 0xa4cf) || (cp >= 0xac00 && cp <= 0xd7a3) ||
        (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0xfe30 && cp <= 0xfe4f) || (cp >= 0xff00 && cp <= 0xff60) ||
        (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1faff) || (cp >= 0x20000 && cp <= 0x3fffd))) ? 2 : 1;
    }
  }
  return n;
}

// --- the panel -------------------------------------------------------------------------------------

/** A virtual list of console lines with its toolbar; `view.node` is the panel's body. */
export class LogView {
  constructor({ height = null, gutter = true } = {}) {
    this.text = [];      // by line number - 1
    this.stream = [];    // 0 stdout, 1 stderr
    this.cols = [];      // columns each line takes
    this.lower = [];     // lower-case plain text, made when a search asks
    this.vis = null;     // indices of the lines shown (null: all)
    this.rows = null;    // prefix sums of the rows of the lines shown
    this.width = 0;
    this.lineH = 18;
    this.charW = 7.8;
    this.follow = true;
    this.showOut = true;
    this.showErr = true;
    this.query = "";
    this.gutter = gutter;
    this.scroller = el("div", { class: "log-scroll", tabindex: "0", role: "log", "aria-label": "console output" });
    if (height) this.scroller.style.height = height;
    this.spacer = el("div", { class: "log-spacer" });
    this.window = el("div", { class: "log-window" });
    this.scroller.append(this.spacer);
    this.spacer.append(this.window);
    this.count = el("span", { class: "muted log-count" });
    this.frame = 0;
    this.scroller.addEventListener("scroll", () => {
      if (this.programmatic) { this.programmatic = false; } else if (this.followBox) {
        const atEnd = this.scroller.scrollTop + this.scroller.clientHeight >= this.scroller.scrollHeight - this.lineH * 2;
        if (this.follow !== atEnd) { this.follow = atEnd; this.followBox.checked = atEnd; }
      }
      this.schedule();
    });
    this.resize = new ResizeObserver(() => { if (this.measure()) this.relayout(); else this.schedule(); });
    this.resize.observe(this.scroller);
  }

  toolbar() {
    const search = el("input", { type: "search", placeholder: "search the logs", "aria-label": "search the logs", "data-log-search": "1" });
    const out = el("input", { type: "checkbox", checked: true, "aria-label": "stdout" });
    const err = el("input", { type: "checkbox", checked: true, "aria-label": "stderr" });
    const follow = el("input", { type: "checkbox", checked: this.follow, "aria-label": "follow" });
    this.followBox = follow;
    let debounce = null;
    search.addEventListener("input", () => {
      clearTimeout(debounce);
      debounce = setTimeout(() => { this.query = search.value.toLowerCase(); this.refilter(); }, 120);
    });
    out.addEventListener("change", () => { this.showOut = out.checked; this.refilter(); });
    err.addEventListener("change", () => { this.showErr = err.checked; this.refilter(); });
    follow.addEventListener("change", () => { this.follow = follow.checked; if (this.follow) this.toEnd(); });
    return el("div", { class: "toolbar log-toolbar" }, search,
      el("label", {}, out, " stdout"), el("label", { class: "stderr-label" }, err, " stderr"),
      el("label", {}, follow, " follow"), el("span", { class: "grow" }), this.count);
  }

  /** Font metrics and the width; whether the columns per row changed. */
  measure() {
    const probe = el("div", { class: "log-line" }, el("span", { class: "log-text", text: "0".repeat(100) }));
    probe.style.position = "absolute";
    probe.style.visibility = "hidden";
    this.window.append(probe);
    const r = probe.firstChild.getBoundingClientRect();
    const lh = probe.getBoundingClientRect().height;
    probe.remove();
    if (r.width > 0) this.charW = r.width / 100;
    if (lh > 0) this.lineH = lh;
    const digits = String(Math.max(10, this.text.length)).length;
    const gutterW = this.gutter ? (digits + 2) * this.charW + 8 : 0;  // style.css .log-n: number, padding, marker, gap
    const width = Math.max(10, Math.floor((this.scroller.clientWidth - gutterW - 16) / this.charW));
    this.window.style.setProperty("--gutter", `${digits + 1}ch`);
    const changed = width !== this.width;
    this.width = width;
    return changed;
  }

  /** Lines `rows`: [n, stream, text, partial]; a known n is rewritten in place. */
  put(rows) {
    let changedOld = false;
    const before = this.text.length;
    for (const [n, s, t] of rows) {
      const i = n - 1;
      if (i < this.text.length) changedOld = true;
      while (this.text.length < i) { this.text.push(""); this.stream.push(0); this.cols.push(0); }
      this.text[i] = t;
      this.stream[i] = s;
      this.cols[i] = columns(t);
      if (this.lower.length > i) this.lower[i] = plainText(t).toLowerCase();
    }
    if (changedOld || this.vis !== null || !this.rows) this.refilter(false);
    else this.extend(before);
    if (this.follow) this.toEnd(); else this.schedule();
  }

  matches(i) {
    if (this.stream[i] === 0 ? !this.showOut : !this.showErr) return false;
    if (!this.query) return true;
    while (this.lower.length <= i) this.lower.push(plainText(this.text[this.lower.length]).toLowerCase());
    return this.lower[i].includes(this.query);
  }

  refilter(toEnd = true) {
    const all = this.showOut && this.showErr && !this.query;
    if (all) this.vis = null;
    else {
      const vis = [];
      for (let i = 0; i < this.text.length; i++) if (this.matches(i)) vis.push(i);
      this.vis = vis;
    }
    this.relayout();
    if (toEnd && this.follow) this.toEnd();
  }

  /** The rows of every line shown, from scratch (a resize, a filter, a rewritten line). */
  relayout() {
    const n = this.vis ? this.vis.length : this.text.length;
    const rows = new Float64Array(n + 1);
    for (let k = 0; k < n; k++) {
      const i = this.vis ? this.vis[k] : k;
      rows[k + 1] = rows[k] + Math.max(1, Math.ceil(this.cols[i] / this.width));
    }
    this.rows = rows;
    this.shown = n;
    this.updateCount();
    this.schedule();
  }

  /** New lines at the end (no filter): the sums go on from where they were. */
  extend(from) {
    const n = this.text.length;
    const rows = new Float64Array(n + 1);
    rows.set(this.rows.subarray(0, Math.min(from, this.shown) + 1));
    for (let k = Math.min(from, this.shown); k < n; k++) rows[k + 1] = rows[k] + Math.max(1, Math.ceil(this.cols[k] / this.width));
    this.rows = rows;
    this.shown = n;
    this.updateCount();
  }

  updateCount() {
    const total = this.text.length;
    this.count.textContent = this.shown === total ? `${fmtNum(total)} line${total === 1 ? "" : "s"}`
      : `${fmtNum(this.shown)} of ${fmtNum(total)} lines`;
    this.spacer.style.height = `${(this.rows ? this.rows[this.shown] : 0) * this.lineH + 8}px`;
  }

  toEnd() {
    this.programmatic = true;
    this.scroller.scrollTop = this.scroller.scrollHeight;
    this.schedule();
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => { this.frame = 0; this.render(); });
  }

  /** The lines in view (and a few around them) into the DOM; nothing else is. */
  render() {
    if (!this.rows) return;
    const top = this.scroller.scrollTop / this.lineH;
    const bottom = top + this.scroller.clientHeight / this.lineH;
    const rows = this.rows;
    let lo = 0, hi = this.shown;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (rows[mid + 1] <= top) lo = mid + 1; else hi = mid; }
    const first = Math.max(0, lo - OVERSCAN);
    let last = lo;
    while (last < this.shown && rows[last] < bottom) last++;
    last = Math.min(this.shown, last + OVERSCAN);
    const frag = document.createDocumentFragment();
    for (let k = first; k < last; k++) {
      const i = this.vis ? this.vis[k] : k;
      const line = el("div", { class: this.stream[i] ? "log-line stderr" : "log-line", dataset: { n: i + 1 } });
      if (this.gutter) line.append(el("span", { class: "log-n", text: String(i + 1) }));
      const text = el("span", { class: "log-text" });
      text.append(...ansiNodes(this.text[i].replace(/\t/g, "        ")));
      line.append(text);
      frag.append(line);
    }
    this.window.style.transform = `translateY(${rows[first] * this.lineH}px)`;
    clear(this.window).append(frag);
  }

  destroy() {
    this.resize.disconnect();
    if (this.frame) cancelAnimationFrame(this.frame);
  }
}

/** The Logs section of the run page: loads the console, then follows it while the run is live. */
export function logsSection(ctx) {
  const view = new LogView();
  const status = el("div", {}, loading("Loading the logs…"));
  const node = box("Logs", view.toolbar(), status, view.scroller);
  node.dataset.state = "loading";
  let cursor = null;
  let timer = null;
  const url = `/api/runs/${encodeURIComponent(ctx.id)}/console`;
  const poll = async () => {
    if (ctx.stopped || !node.isConnected && cursor) { view.destroy(); return; }
    let res;
    try {
      res = await api(url, cursor ? { since: cursor } : {});
    } catch (err) {
      clear(status).append(errorBox(`cannot load the logs: ${err.message}`));
      node.dataset.state = "error";
      return;
    }
    if (ctx.stopped) { view.destroy(); return; }
    const first = cursor === null;
    cursor = res.cursor;
    if (first) {
      clear(status);
      if (res.truncated) status.append(el("p", { class: "muted", text: "Only the last lines are shown here; `tracker logs` prints them all." }));
      view.measure();
    }
    if (res.lines.length || first) view.put(res.lines);
    if (first && !res.lines.length && res.status !== "running") status.append(el("p", { class: "muted", text: "Nothing was printed while this run was open (or its console was not captured)." }));
    node.dataset.state = "ready";
    if (res.status === "running") timer = setTimeout(poll, document.hidden ? POLL_MS * 5 : POLL_MS);
  };
  ctx.logsStop = () => { clearTimeout(timer); view.destroy(); };
  requestAnimationFrame(poll);
  return node;
}

/** The last `n` lines of the console beside a failed run's traceback (a plain block, no toolbar). */
export function lastLinesNode(ctx, n = 100) {
  const wrap = el("div", { class: "last-lines" }, el("p", { class: "muted", text: `last ${n} lines of the console` }), loading("Loading…"));
  api(`/api/runs/${encodeURIComponent(ctx.id)}/console`, { tail: n }).then((res) => {
    if (!res.lines.length) { wrap.remove(); return; }
    const pre = el("pre", { class: "trace console-tail" });
    for (const [, s, t] of res.lines) {
      const line = el("span", { class: s ? "log-line stderr" : "log-line" });
      line.append(...ansiNodes(t), "\n");
      pre.append(line);
    }
    wrap.lastChild.replaceWith(pre);
    requestAnimationFrame(() => { pre.scrollTop = pre.scrollHeight; });
  }).catch((err) => { wrap.lastChild.replaceWith(errorBox(`cannot load the console: ${err.message}`)); });
  return wrap;
}
