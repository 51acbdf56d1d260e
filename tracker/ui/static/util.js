// Small helpers shared by the pages: elements (text only, never HTML), numbers, times, colours, fetch.

/** Make an element. `props`: class, text, title, attrs, on: {event: fn}; children: nodes or strings (as text). */
export function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = String(v);
    else if (k === "on") for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
    else if (k === "dataset") Object.assign(node.dataset, v);
    else if (k === "style") Object.assign(node.style, v);
    else if (k in node && typeof v !== "string") node[k] = v;
    else node.setAttribute(k, v === true ? "" : String(v));
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

// --- the API ---------------------------------------------------------------------------------

export class ApiError extends Error {
  constructor(message, status) { super(message); this.status = status; }
}

/** GET a JSON endpoint; an error status throws ApiError with the server's message. */
export async function api(path, params = {}, { signal } = {}) {
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === "") continue;
    if (Array.isArray(v)) v.forEach((x) => url.searchParams.append(k, x));
    else url.searchParams.set(k, v);
  }
  let resp;
  try {
    resp = await fetch(url, { signal, headers: { accept: "application/json" } });
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw new ApiError(`cannot reach the tracker server (${err.message})`, 0);
  }
  let body = null;
  try { body = await resp.json(); } catch { /* not JSON */ }
  if (!resp.ok) throw new ApiError(body && body.error ? body.error : `HTTP ${resp.status}`, resp.status);
  return body;
}

// --- numbers and times -------------------------------------------------------------------------

/** A stored number: finite numbers as they are, the store's "NaN"/"Infinity" strings as numbers. */
export function num(v) {
  if (typeof v === "number") return v;
  if (v === "NaN") return NaN;
  if (v === "Infinity") return Infinity;
  if (v === "-Infinity") return -Infinity;
  return null;
}

export function fmtNum(v, digits = 4) {
  if (v === null || v === undefined || v === "") return "–";
  if (typeof v === "string") { if (num(v) === null) return v; v = num(v); }
  if (typeof v === "boolean") return String(v);
  if (Number.isNaN(v)) return "NaN";
  if (!Number.isFinite(v)) return v > 0 ? "∞" : "−∞";
  if (Number.isInteger(v) && Math.abs(v) < 1e12) return v.toLocaleString("en-US").replace(/,/g, "\u2009");
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e9)) return v.toExponential(digits - 1);
  return String(Number(v.toPrecision(digits)));
}

export function fmtValue(v) {
  if (v === null || v === undefined) return "–";
  if (typeof v === "number" || num(v) !== null) return fmtNum(v);
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

export function fmtDuration(s) {
  if (s === null || s === undefined || !Number.isFinite(s)) return "–";
  if (s < 10) return `${s.toFixed(s < 1 ? 2 : 1)} s`;
  s = Math.max(0, Math.round(s));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
  return `${h}:${String(m).padStart(2, "0")}:${String(sec).padStart(2, "0")}`;
}

export function fmtTime(t) {
  if (!t) return "–";
  const d = new Date(t * 1000);
  return d.toLocaleString(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
}

export function fmtAgo(t, now = Date.now() / 1000) {
  if (!t) return "–";
  const s = now - t;
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  if (s < 2 * 86400) return "yesterday";
  if (s < 30 * 86400) return `${Math.floor(s / 86400)} days ago`;
  return new Date(t * 1000).toLocaleDateString();
}

export function shortId(id) { return String(id).slice(0, 8); }

// --- colours -----------------------------------------------------------------------------------

/** One colour per run, from its id: the same on every page and chart. */
export function runColor(id) {
  let h = 2166136261;
  for (const ch of String(id)) { h ^= ch.charCodeAt(0); h = Math.imul(h, 16777619); }
  const hue = ((h >>> 0) % 360);
  const dark = matchMedia("(prefers-color-scheme: dark)").matches;
  return `hsl(${hue} ${dark ? 70 : 65}% ${dark ? 62 : 45}%)`;
}

const PALETTE = ["#3b82f6", "#ef4444", "#10b981", "#f59e0b", "#8b5cf6", "#ec4899", "#14b8a6", "#f97316",
  "#6366f1", "#84cc16", "#06b6d4", "#a855f7"];
export function paletteColor(i) { return PALETTE[i % PALETTE.length]; }

export function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

export function dot(color, title) {
  const d = el("span", { class: "dot", title });
  d.style.background = color;
  return d;
}

export function statusBadge(status) {
  return el("span", { class: `status status-${status}`, text: status });
}

/** A section frame with a heading, used by every page. */
export function box(title, ...children) {
  return el("section", { class: "box" }, title ? el("h2", { text: title }) : null, ...children);
}

export function errorBox(message) {
  return el("div", { class: "error", role: "alert" }, el("strong", { text: "Error: " }), String(message));
}

export function loading(text = "Loading…") {
  return el("p", { class: "loading", text });
}

/** Nested config as dotted keys. */
export function flatten(obj, prefix = "", out = {}) {
  for (const [k, v] of Object.entries(obj || {})) {
    if (v && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length) flatten(v, `${prefix}${k}.`, out);
    else out[`${prefix}${k}`] = v;
  }
  return out;
}

/** Exponential moving average with bias correction (TensorBoard's smoothing); gaps stay gaps. */
export function smooth(ys, weight) {
  if (!weight) return ys;
  const out = new Array(ys.length);
  let last = 0, n = 0;
  for (let i = 0; i < ys.length; i++) {
    const y = ys[i];
    if (y === null || y === undefined || !Number.isFinite(y)) { out[i] = y === undefined ? undefined : null; continue; }
    last = last * weight + (1 - weight) * y;
    n++;
    out[i] = last / (1 - Math.pow(weight, n));
  }
  return out;
}
