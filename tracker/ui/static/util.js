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

/**
 * A name as nodes that may wrap after `_`, `.`, `/` and `-` (a <wbr> there), never in the middle of a word:
 * "scale_sensitivity" wraps as "scale_" / "sensitivity", not "scale_sensi" / "tivity".
 */
export function breakable(name) {
  const out = [];
  for (const part of String(name).split(/(?<=[_./-])/)) {
    if (out.length) out.push(document.createElement("wbr"));
    out.push(document.createTextNode(part));
  }
  return out;
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
// One formatter for every table, card, axis and tick; one duration format and one time format, as the CLI
// writes them (tracker/cli/render.py cell(), tracker/cli/text.py duration() and when()).

/** A stored number: finite numbers as they are, the store's "NaN"/"Infinity" strings as numbers. */
export function num(v) {
  if (typeof v === "number") return v;
  if (v === "NaN") return NaN;
  if (v === "Infinity") return Infinity;
  if (v === "-Infinity") return -Infinity;
  return null;
}

const THIN = "\u2009";
/** A figure space: as wide as a digit in tabular figures; pads numbers so their decimal points line up. */
export const FIGURE_SPACE = "\u2007";

function grouped(n) {
  const s = Math.abs(n).toFixed(0).replace(/\B(?=(\d{3})+(?!\d))/g, THIN);
  return n < 0 ? `-${s}` : s;
}

function expText(v, digits) {
  const [m, e] = v.toExponential(Math.max(0, digits - 1)).split("e");
  const mant = m.includes(".") ? m.replace(/0+$/, "").replace(/\.$/, "") : m;
  return `${mant}e${e.replace("+", "")}`;
}

/**
 * A number as text, by the CLI's rules (tracker/cli/numbers.py number(); a test compares the two):
 * integers whole (thin-space groups from 10 000), other numbers with `digits` significant digits and no
 * trailing zeros, exponent form below 0.001 and from 1e9 ("2.467e-9", "3e-4"). NaN, inf, -inf and
 * booleans (yes / no) as the CLI writes them.
 */
export function fmtNum(v, digits = 4) {
  if (v === null || v === undefined || v === "") return "–";
  if (typeof v === "string") { if (num(v) === null) return v; v = num(v); }
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (Number.isNaN(v)) return "NaN";
  if (!Number.isFinite(v)) return v > 0 ? "inf" : "-inf";
  const a = Math.abs(v);
  if (Number.isInteger(v) && a < 1e15) return a >= 1e4 ? grouped(v) : String(v === 0 ? 0 : v);
  if (a < 1e-3 || a >= 1e9) return expText(v, digits);
  if (a >= 10 ** digits) return grouped(Math.sign(v) * Math.round(a));  // whole, halves away from zero
  const r = Number(v.toPrecision(digits));
  if (Number.isInteger(r)) return Math.abs(r) >= 1e4 ? grouped(r) : String(r === 0 ? 0 : r);  // 9999.5: 10 000
  return String(r);
}

/**
 * A column's texts padded on the right with figure spaces so that the decimal points of its fixed-point
 * numbers line up (tracker/cli/numbers.py aligned()); other texts are left as they are. `widestGiven`:
 * the decimals to pad to (a column drawn a few rows at a time knows them from all its rows).
 */
export function alignDecimals(texts, widestGiven = null) {
  const fixed = texts.map((t) => /^-?[0-9\u2009]+(\.[0-9]+)?$/.test(t));
  const decs = texts.map((t) => (t.includes(".") ? t.length - t.indexOf(".") - 1 : 0));
  const widest = widestGiven ?? Math.max(0, ...decs.filter((_, i) => fixed[i]));
  if (!widest) return texts.slice();
  return texts.map((t, i) => (!fixed[i] ? t : t + FIGURE_SPACE.repeat(decs[i] ? widest - decs[i] : widest + 1)));
}

/** "Nice" tick positions over [lo, hi]: steps of 1, 2, 2.5 or 5 times a power of ten, about `count` of them. */
export function niceTicks(lo, hi, count = 5) {
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return { ticks: [], step: 1, lo: 0, hi: 1 };
  if (hi < lo) [lo, hi] = [hi, lo];
  if (hi === lo) { const d = Math.abs(lo) * 0.1 || 1; lo -= d; hi += d; }
  const raw = (hi - lo) / Math.max(1, count);
  const p = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * p).find((s) => s >= raw * 0.999);
  const first = Math.floor(lo / step + 1e-9) * step, last = Math.ceil(hi / step - 1e-9) * step;
  const ticks = [];
  for (let i = 0, v = first; v <= last + step * 1e-6 && i < 1000; i++, v = first + i * step) ticks.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  return { ticks, step, lo: first, hi: last };
}

/** A tick label: as many decimals as the step between ticks needs (0.25 steps: 2), no more. */
export function fmtTick(v, step) {
  if (v === null || v === undefined) return "";
  if (!Number.isFinite(step) || step <= 0) return fmtNum(v, 3);
  const a = Math.abs(v);
  // Exponents where the numbers themselves get one (below 0.001, from 1e9), so an axis reads like the config.
  if ((a >= 1e9 || step < 1e-3) && a !== 0) return expText(v, 3);
  const exp = Math.floor(Math.log10(step) + 1e-9);
  let decimals = Math.max(0, -exp);
  if (decimals > 0 || exp < 0) {
    const mant = step / 10 ** exp;
    if (Math.abs(mant - Math.round(mant)) > 1e-6) decimals += 1;  // 2.5, 0.25...
  }
  if (decimals === 0) return a >= 1e4 ? grouped(Math.round(v)) : String(Math.round(v) || 0);
  return v.toFixed(Math.min(decimals, 12));
}

/** Column names whose numbers are epoch seconds, byte counts or durations in seconds. */
const TIME_COL = /(^|_)(time|timestamp|created_at|ended_at|started|ended|started_at|first_time|last_time)$/;
const BYTES_COL = /(^|_)bytes($|_)|^size$/;  // as tracker/cli/text.py is_size_column: batch_size is no byte count
const SECONDS_COL = /(^|_)(duration|elapsed|seconds|wall|secs)($|_s$)|_s$|_seconds$/;

/** A table cell: the column's unit decides (times, byte counts, durations), else fmtValue. */
export function fmtCell(column, v) {
  const n = num(v);
  const c = String(column || "").toLowerCase();
  if (typeof v === "number" && Number.isFinite(n)) {
    if (TIME_COL.test(c) && n > 1e8) return fmtTime(n);
    if (BYTES_COL.test(c)) return fmtBytes(n);
    if (SECONDS_COL.test(c)) return fmtDuration(n);
  }
  return fmtValue(v);
}

/** Columns that hold a statistic of the quantity the row's label names (tracker/cli/text.py STAT_COLUMNS). */
const STAT_COLS = new Set(["mean", "peak", "last", "first", "min", "max", "median", "value", "total"]);

/** The unit-bearing name a row is about ("memory_used_bytes"), when one of its text cells is one. */
export function rowUnit(row) {
  for (const v of Object.values(row || {})) if (typeof v === "string" && (BYTES_COL.test(v.toLowerCase()) || SECONDS_COL.test(v.toLowerCase()))) return v;
  return null;
}

/** A table cell of `row`: a statistic column (mean, peak...) takes the unit its row's label names. */
export function fmtRowCell(column, v, unit) {
  return fmtCell(unit && STAT_COLS.has(String(column).toLowerCase()) ? unit : column, v);
}

export function fmtValue(v) {
  if (v === null || v === undefined) return "–";
  if (typeof v === "boolean") return v ? "yes" : "no";
  if (typeof v === "number" || num(v) !== null) return fmtNum(v);
  if (Array.isArray(v)) return `[${v.map(fmtValue).join(", ")}]`;
  if (typeof v === "object") return `{${Object.entries(v).map(([k, x]) => `${k}: ${fmtValue(x)}`).join(", ")}}`;
  return String(v);
}

/** Bytes with binary units: 512 B, 1.5 KiB, 3.2 GiB. */
export function fmtBytes(n) {
  if (typeof n !== "number" || !Number.isFinite(n)) return fmtValue(n);
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let i = 0;
  let x = Math.abs(n);
  while (x >= 1024 && i < units.length - 1) { x /= 1024; i += 1; }
  const text = i === 0 ? String(Math.round(x)) : x.toFixed(x < 10 ? 2 : 1);
  return `${n < 0 ? "-" : ""}${text} ${units[i]}`;
}

/** Seconds as 32ms, 4.2s, 3m05s, 1h02m or 2d07h (the CLI's format). */
export function fmtDuration(s) {
  if (s === null || s === undefined || !Number.isFinite(s)) return "–";
  if (s < 1) return `${Math.round(Math.max(s, 0) * 1000)}ms`;
  if (s < 60) return `${s.toFixed(1)}s`;
  let m = Math.floor(s / 60);
  const sec = Math.floor(s) % 60;
  if (m < 60) return `${m}m${String(sec).padStart(2, "0")}s`;
  let h = Math.floor(m / 60);
  m %= 60;
  if (h < 48) return `${h}h${String(m).padStart(2, "0")}m`;
  const d = Math.floor(h / 24);
  h %= 24;
  return `${d}d${String(h).padStart(2, "0")}h`;
}

const pad2 = (n) => String(n).padStart(2, "0");

/** Epoch seconds as local "2025-03-14 09:26:53" (the CLI's format); `short` leaves out the date when today. */
export function fmtTime(t, { short = false } = {}) {
  if (t === null || t === undefined || !Number.isFinite(t) || t === 0) return "–";
  const d = new Date(t * 1000);
  const day = `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())}`;
  const time = `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
  if (short && new Date().toDateString() === d.toDateString()) return time;
  return `${day} ${time}`;
}

export function fmtAgo(t, now = Date.now() / 1000) {
  if (!t) return "–";
  const s = now - t;
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  if (s < 2 * 86400) return "yesterday";
  if (s < 30 * 86400) return `${Math.floor(s / 86400)} days ago`;
  return fmtTime(t).slice(0, 10);
}

export function shortId(id) { return String(id).slice(0, 8); }

// --- colours -----------------------------------------------------------------------------------
// A run's hue comes from a hash of its full id; colours are OKLCH (even lightness across hues, so no
// hue reads as "the same green" as its neighbour) turned into sRGB hex for canvas and CSS alike.

function hashHue(id) {
  let h = 2166136261;
  for (const ch of String(id)) { h ^= ch.charCodeAt(0); h = Math.imul(h, 16777619); }
  h ^= h >>> 15; h = Math.imul(h, 2246822519); h ^= h >>> 13;
  return (h >>> 0) % 360;
}

function oklchToHex(L, C, H) {
  const toRgb = (c) => {
    const hr = (H * Math.PI) / 180;
    const a = c * Math.cos(hr), b = c * Math.sin(hr);
    const l_ = L + 0.3963377774 * a + 0.2158037573 * b;
    const m_ = L - 0.1055613458 * a - 0.0638541728 * b;
    const s_ = L - 0.0894841775 * a - 1.291485548 * b;
    const l = l_ ** 3, m = m_ ** 3, s = s_ ** 3;
    const lin = [4.0767416621 * l - 3.3077115913 * m + 0.2309699292 * s,
      -1.2684380046 * l + 2.6097574011 * m - 0.3413193965 * s,
      -0.0041960863 * l - 0.7034186147 * m + 1.707614701 * s];
    return lin.map((x) => (x <= 0.0031308 ? 12.92 * x : 1.055 * x ** (1 / 2.4) - 0.055));
  };
  let c = C, rgb = toRgb(c);
  while (c > 0 && rgb.some((x) => x < 0 || x > 1)) { c -= 0.005; rgb = toRgb(c); }  // into the sRGB gamut
  return `#${rgb.map((x) => Math.round(Math.min(1, Math.max(0, x)) * 255).toString(16).padStart(2, "0")).join("")}`;
}

const THEME = { light: [0.6, 0.17], dark: [0.76, 0.15] };

function theme() { return matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"; }

function hueColor(hue) {
  const [L, C] = THEME[theme()];
  return oklchToHex(L, C, hue);
}

function hexToOklab(hex) {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255)
    .map((v) => (v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
  const l = Math.cbrt(0.4122214708 * r + 0.5363325363 * g + 0.0514459929 * b);
  const m = Math.cbrt(0.2119034982 * r + 0.6806995451 * g + 0.1073969566 * b);
  const s = Math.cbrt(0.0883024619 * r + 0.2817188376 * g + 0.6299787005 * b);
  return [0.2104542553 * l + 0.793617785 * m - 0.0040720468 * s, 1.9779984951 * l - 2.428592205 * m + 0.4505937099 * s,
    0.0259040371 * l + 0.7827717662 * m - 0.808675766 * s];
}

/** How far apart two colours look: their distance in OKLab (about 0.02 is just noticeable). */
export function colorDistance(hexA, hexB) {
  const a = hexToOklab(hexA), b = hexToOklab(hexB);
  return Math.hypot(a[0] - b[0], a[1] - b[1], a[2] - b[2]);
}

// Hues are spread where they look apart, not where their degrees are: the sRGB gamut takes chroma from the
// teals and cyans, so 30° there differ less than 30° among the reds. `look` maps a hue to the share of the
// colour circle's perceived length before it (0..360), `hueAt` back.
const LOOKS = {};
function looks() {
  const key = theme();
  if (!LOOKS[key]) {
    const labs = [];
    for (let h = 0; h <= 360; h++) labs.push(hexToOklab(hueColor(h)));
    const cum = [0];
    for (let h = 1; h <= 360; h++) cum.push(cum[h - 1] + Math.hypot(...labs[h].map((x, k) => x - labs[h - 1][k])));
    LOOKS[key] = cum.map((c) => (c / cum[360]) * 360);
  }
  return LOOKS[key];
}
function look(hue) {
  const t = looks(), h = ((hue % 360) + 360) % 360, i = Math.floor(h);
  return t[i] + (t[Math.min(360, i + 1)] - t[i]) * (h - i);
}
function hueAt(u) {
  const t = looks(), v = ((u % 360) + 360) % 360;
  let lo = 0, hi = 360;
  while (hi - lo > 1) { const mid = (lo + hi) >> 1; if (t[mid] <= v) lo = mid; else hi = mid; }
  return lo + (t[hi] > t[lo] ? (v - t[lo]) / (t[hi] - t[lo]) : 0);
}

/** One colour per run, from its full id (never the prefix a URL holds): a page showing one run alone. */
export function runColor(id) { return hueColor(hashHue(id)); }

/** Beyond this many runs shown together, colours no longer tell runs apart: each keeps its own (runColor). */
export const SPREAD_UP_TO = 24;

/**
 * The colours of runs shown together: every page asks this for the runs it shows (the runs page for the runs
 * it lists, the compare page, reports, a sweep's trials), so a set of runs has the same colours on each.
 * Each run starts from its own hue (the one runColor gives it), and only where two would look alike is the
 * later one moved along the circle, as little as needed, judged by how far apart the colours look (OKLab),
 * not by degrees. Deterministic for the same set of ids. Returns {id: colour}.
 */
export function runColors(ids) {
  const uniq = [...new Set(ids.map(String))];
  const n = uniq.length;
  if (n > SPREAD_UP_TO) return Object.fromEntries(uniq.map((id) => [id, runColor(id)]));
  const items = uniq.map((id) => ({ id, h: hashHue(id) })).map((it) => ({ ...it, u: look(it.h), moved: false }))
    .sort((a, b) => a.u - b.u || (a.id < b.id ? -1 : 1));
  if (n > 1) {
    // Colours at least this far apart (in shares of the circle's look) are told apart: 85% of an even spread, at most 60.
    const want = Math.min(60, (360 / n) * 0.85);
    const gap = (i) => ((((items[(i + 1) % n].u - items[i].u) % 360) + 360) % 360);
    if (items.some((_, i) => gap(i) < want)) {
      // Start after the widest gap (nothing is pushed across it), then push each one forward just enough.
      let widest = 0;
      items.forEach((_, i) => { if (gap(i) > gap(widest)) widest = i; });
      const order = items.map((_, k) => items[(widest + 1 + k) % n]);
      const base = order[0].u;
      let prev = -Infinity;
      const pos = order.map((it) => {
        let p = (((it.u - base) % 360) + 360) % 360;
        if (p < prev + want) p = prev + want;
        prev = p;
        return p;
      });
      if (pos[n - 1] + want > 360) {
        // No room left at the end: spread every run evenly, each near its own colour on average.
        const stepDeg = 360 / n;
        let sx = 0, sy = 0;
        items.forEach((it, i) => { const d = ((it.u - i * stepDeg) * Math.PI) / 180; sx += Math.cos(d); sy += Math.sin(d); });
        const offset = (Math.atan2(sy, sx) * 180) / Math.PI;
        items.forEach((it, i) => { it.u = (((offset + i * stepDeg) % 360) + 360) % 360; it.moved = true; });
      } else order.forEach((it, k) => { const u = (base + pos[k]) % 360; it.moved = Math.abs(u - it.u) > 1e-9; it.u = u; });
    }
  }
  return Object.fromEntries(items.map((it) => [it.id, hueColor(it.moved ? hueAt(it.u) : it.h)]));
}

// Series of a panel without a colour of their own: Tableau 10, made to be told apart (the old palette had
// near twins: blue/indigo, teal/cyan, violet/purple, amber/orange).
const PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7",
  "#9c755f", "#bab0ac"];
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
  if (!weight) return ys.slice();
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
