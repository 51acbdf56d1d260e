// ANSI escapes (SGR colours and styles) as nodes: the Logs panel's lines, and any text a run printed that a table
// shows (the console summary's last line, on the run page, the compare page and in reports). Other escapes
// (cursor moves, titles, links) are dropped, never shown raw.

const ESCAPES = /\x1b\[([0-9;:]*)m|\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]/g;

/** A line without its escape sequences. */
export function plainText(text) {
  return text.indexOf("\x1b") < 0 ? text : text.replace(ESCAPES, "");
}

function color256(n) {
  if (n < 16) return null;
  if (n >= 232) { const v = 8 + (n - 232) * 10; return `rgb(${v},${v},${v})`; }
  const i = n - 16, steps = [0, 95, 135, 175, 215, 255];
  return `rgb(${steps[Math.floor(i / 36)]},${steps[Math.floor(i / 6) % 6]},${steps[i % 6]})`;
}

/** The nodes of one line: text, and spans for the parts an SGR escape styles (classes for the 16 colours). */
export function ansiNodes(text) {
  if (text.indexOf("\x1b") < 0) return [document.createTextNode(text)];
  const out = [];
  const st = { fg: null, bg: null, fgRgb: null, bgRgb: null, bold: false, dim: false, italic: false, underline: false, inverse: false };
  const emit = (s) => {
    if (!s) return;
    const styled = st.fg !== null || st.bg !== null || st.fgRgb || st.bgRgb || st.bold || st.dim || st.italic || st.underline || st.inverse;
    if (!styled) { out.push(document.createTextNode(s)); return; }
    const span = document.createElement("span");
    const cls = [];
    let fg = st.fg, bg = st.bg, fgRgb = st.fgRgb, bgRgb = st.bgRgb;
    if (st.inverse) { [fg, bg, fgRgb, bgRgb] = [bg ?? "inv-fg", fg ?? "inv-bg", bgRgb, fgRgb]; }
    if (fg !== null) cls.push(`ansi-fg-${fg}`);
    if (bg !== null) cls.push(`ansi-bg-${bg}`);
    if (st.bold) cls.push("ansi-bold");
    if (st.dim) cls.push("ansi-dim");
    if (st.italic) cls.push("ansi-italic");
    if (st.underline) cls.push("ansi-underline");
    span.className = cls.join(" ");
    if (fgRgb) span.style.color = fgRgb;
    if (bgRgb) span.style.backgroundColor = bgRgb;
    span.textContent = s;
    out.push(span);
  };
  let last = 0;
  ESCAPES.lastIndex = 0;
  let m;
  while ((m = ESCAPES.exec(text))) {
    emit(text.slice(last, m.index));
    last = ESCAPES.lastIndex;
    if (m[1] === undefined) continue;  // a cursor move, an erase, a title, a link: not drawn
    const codes = m[1] === "" ? [0] : m[1].split(/[;:]/).map((x) => Number(x) || 0);
    for (let i = 0; i < codes.length; i++) {
      const c = codes[i];
      if (c === 0) Object.assign(st, { fg: null, bg: null, fgRgb: null, bgRgb: null, bold: false, dim: false, italic: false, underline: false, inverse: false });
      else if (c === 1) st.bold = true;
      else if (c === 2) st.dim = true;
      else if (c === 3) st.italic = true;
      else if (c === 4) st.underline = true;
      else if (c === 7) st.inverse = true;
      else if (c === 22) st.bold = st.dim = false;
      else if (c === 23) st.italic = false;
      else if (c === 24) st.underline = false;
      else if (c === 27) st.inverse = false;
      else if (c >= 30 && c <= 37) { st.fg = c - 30; st.fgRgb = null; }
      else if (c >= 90 && c <= 97) { st.fg = c - 90 + 8; st.fgRgb = null; }
      else if (c >= 40 && c <= 47) { st.bg = c - 40; st.bgRgb = null; }
      else if (c >= 100 && c <= 107) { st.bg = c - 100 + 8; st.bgRgb = null; }
      else if (c === 39) { st.fg = null; st.fgRgb = null; }
      else if (c === 49) { st.bg = null; st.bgRgb = null; }
      else if (c === 38 || c === 48) {
        let rgb = null, basic = null;
        if (codes[i + 1] === 5) { const n = codes[i + 2] ?? 0; if (n < 16) basic = n; else rgb = color256(n); i += 2; }
        else if (codes[i + 1] === 2) { rgb = `rgb(${codes[i + 2] ?? 0},${codes[i + 3] ?? 0},${codes[i + 4] ?? 0})`; i += 4; }
        if (c === 38) { st.fg = basic; st.fgRgb = rgb; } else { st.bg = basic; st.bgRgb = rgb; }
      }
    }
  }
  emit(text.slice(last));
  return out;
}

/** A cell's nodes: its text with the colours it printed rendered, or the plain text when it holds no escape. */
export function textNodes(text) {
  return typeof text === "string" && text.indexOf("\x1b") >= 0 ? ansiNodes(text) : [document.createTextNode(String(text))];
}
