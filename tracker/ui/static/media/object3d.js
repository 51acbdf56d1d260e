// The 3D viewer: WebGL, no library. Points are one gl.POINTS draw over typed arrays handed to the GPU as
// they were read (1,000,000 points draw in well under a second); drag orbits, the wheel zooms, a
// double-click resets; colours by the points' rgb, their category or their height; 3D boxes as lines.
// Formats: the tracker's point layout (format "points", parsed in ./points.js, with its boxes and vectors),
// PLY, OBJ, STL, glTF and GLB (a mesh shows its vertices as points and, for OBJ and STL, its edges as lines).

import { clear, cssVar, el, fmtNum } from "../util.js";
import { bytesOf, leftOutNote, metaLine } from "./common.js";
import { parseScene } from "./points.js";

const VERT = `
attribute vec3 a_pos;
attribute vec3 a_rgb;
attribute float a_cat;
uniform mat4 u_mvp;
uniform float u_mode;     // 0: rgb, 1: category, 2: height, 3: one colour (u_color)
uniform vec2 u_hrange;
uniform vec3 u_up;
uniform vec3 u_color;
uniform float u_size;
varying vec3 v_col;
vec3 ramp(float t) {      // a perceptual ramp (viridis, approximated)
  t = clamp(t, 0.0, 1.0);
  vec3 c0 = vec3(0.267, 0.005, 0.329), c1 = vec3(0.128, 0.567, 0.551), c2 = vec3(0.993, 0.906, 0.144);
  return t < 0.5 ? mix(c0, c1, t * 2.0) : mix(c1, c2, t * 2.0 - 1.0);
}
vec3 hue(float h) {
  vec3 k = clamp(abs(mod(h * 6.0 + vec3(0.0, 4.0, 2.0), 6.0) - 3.0) - 1.0, 0.0, 1.0);
  return mix(vec3(0.85), k, 0.75);
}
void main() {
  gl_Position = u_mvp * vec4(a_pos, 1.0);
  gl_PointSize = u_size;
  if (u_mode < 0.5) v_col = a_rgb;
  else if (u_mode < 1.5) v_col = hue(fract(a_cat * 0.618034));
  else if (u_mode < 2.5) v_col = ramp((dot(a_pos, u_up) - u_hrange.x) / max(1e-9, u_hrange.y - u_hrange.x));
  else v_col = u_color;
}`;

const FRAG = `
precision mediump float;
varying vec3 v_col;
void main() { gl_FragColor = vec4(v_col, 1.0); }`;

// --- 4x4 matrices, column-major as WebGL takes them -------------------------------------------------

function perspective(fovy, aspect, near, far) {
  const f = 1 / Math.tan(fovy / 2), nf = 1 / (near - far);
  return new Float32Array([f / aspect, 0, 0, 0, 0, f, 0, 0, 0, 0, (far + near) * nf, -1, 0, 0, 2 * far * near * nf, 0]);
}

function lookAt(eye, at, up) {
  let zx = eye[0] - at[0], zy = eye[1] - at[1], zz = eye[2] - at[2];
  let l = Math.hypot(zx, zy, zz) || 1; zx /= l; zy /= l; zz /= l;
  let xx = up[1] * zz - up[2] * zy, xy = up[2] * zx - up[0] * zz, xz = up[0] * zy - up[1] * zx;
  l = Math.hypot(xx, xy, xz) || 1; xx /= l; xy /= l; xz /= l;
  const yx = zy * xz - zz * xy, yy = zz * xx - zx * xz, yz = zx * xy - zy * xx;
  return new Float32Array([xx, yx, zx, 0, xy, yy, zy, 0, xz, yz, zz, 0,
    -(xx * eye[0] + xy * eye[1] + xz * eye[2]), -(yx * eye[0] + yy * eye[1] + yz * eye[2]), -(zx * eye[0] + zy * eye[1] + zz * eye[2]), 1]);
}

function mul(a, b) {
  const o = new Float32Array(16);
  for (let c = 0; c < 4; c++) for (let r = 0; r < 4; r++) {
    o[c * 4 + r] = a[r] * b[c * 4] + a[4 + r] * b[c * 4 + 1] + a[8 + r] * b[c * 4 + 2] + a[12 + r] * b[c * 4 + 3];
  }
  return o;
}

function compile(gl, type, src) {
  const s = gl.createShader(type);
  gl.shaderSource(s, src);
  gl.compileShader(s);
  if (!gl.getShaderParameter(s, gl.COMPILE_STATUS)) throw new Error(`shader: ${gl.getShaderInfoLog(s)}`);
  return s;
}

/**
 * Bounds of xyz triples for framing: {min, max, center, radius}, non-finite points skipped. A few far
 * outliers (a lidar's stray returns) would shrink the cloud to a dot: the frame holds what lies within
 * 2.5 standard deviations of the mean on each axis, and the min and max are taken over that too.
 */
export function bounds(pos) {
  const n = Math.floor(pos.length / 3);
  const sum = [0, 0, 0], sq = [0, 0, 0];
  let k = 0;
  for (let i = 0; i < n * 3; i += 3) {
    const x = pos[i], y = pos[i + 1], z = pos[i + 2];
    if (!(Number.isFinite(x) && Number.isFinite(y) && Number.isFinite(z))) continue;
    sum[0] += x; sum[1] += y; sum[2] += z; sq[0] += x * x; sq[1] += y * y; sq[2] += z * z; k++;
  }
  if (!k) return { min: [0, 0, 0], max: [0, 0, 0], center: [0, 0, 0], radius: 1 };
  const mean = sum.map((v) => v / k);
  const sd = sq.map((v, a) => Math.sqrt(Math.max(0, v / k - mean[a] * mean[a])));
  const lo = mean.map((m, a) => m - 2.5 * sd[a]), hi = mean.map((m, a) => m + 2.5 * sd[a]);
  const min = [Infinity, Infinity, Infinity], max = [-Infinity, -Infinity, -Infinity];
  for (let i = 0; i < n * 3; i += 3) {
    for (let a = 0; a < 3; a++) {
      const v = pos[i + a];
      if (!(v >= lo[a] && v <= hi[a])) continue;
      if (v < min[a]) min[a] = v;
      if (v > max[a]) max[a] = v;
    }
  }
  for (let a = 0; a < 3; a++) if (min[a] > max[a]) { min[a] = mean[a]; max[a] = mean[a]; }
  const center = min.map((v, i) => (v + max[i]) / 2);
  const radius = Math.max(1e-9, Math.hypot(max[0] - min[0], max[1] - min[1], max[2] - min[2]) / 2);
  return { min, max, center, radius };
}

/**
 * A box's 12 edges from its 8 corners in any order: from one corner, the three edge vectors are the offsets
 * to other corners that are not the sum of two other offsets (face and space diagonals are); every corner
 * is joined to the corner one edge vector away.
 */
export function boxEdges(corners) {
  const c = corners.map((p) => [Number(p[0]), Number(p[1]), Number(p[2])]);
  if (c.length !== 8) return [];
  const d = c.slice(1).map((p) => [p[0] - c[0][0], p[1] - c[0][1], p[2] - c[0][2]]);
  const size = Math.max(...d.map((v) => Math.hypot(...v))) || 1;
  const tol = size * 1e-3;
  const near = (a, b) => Math.abs(a[0] - b[0]) <= tol && Math.abs(a[1] - b[1]) <= tol && Math.abs(a[2] - b[2]) <= tol;
  const edges = d.filter((v, k) => !d.some((a, i) => i !== k && d.some((b, j) => j !== k && j !== i && near([a[0] + b[0], a[1] + b[1], a[2] + b[2]], v))));
  if (edges.length !== 3) return [];
  const out = [];
  for (let i = 0; i < 8; i++) {
    for (const e of edges) {
      const t = [c[i][0] + e[0], c[i][1] + e[1], c[i][2] + e[2]];
      const j = c.findIndex((p) => near(p, t));
      if (j >= 0) out.push([i, j]);
    }
  }
  return out.length === 12 ? out : [];
}

const BOX_DEFAULT = [1, 0.35, 0.2];

export function object3dViewer(container) {
  const canvas = el("canvas", { class: "media-3d", title: "drag to orbit, wheel to zoom, double-click to reset", "aria-label": "3D view" });
  const colorSel = el("select", { "aria-label": "point colours" });
  const sizeSel = el("select", { "aria-label": "point size" }, [1, 2, 3, 5].map((s) => el("option", { value: s, text: `${s} px` })));
  sizeSel.value = "2";
  const info = el("span", { class: "muted" });
  const meta = el("div");
  const wrap = el("div", { class: "media-3d-wrap" }, canvas,
    el("div", { class: "media-3d-bar" }, el("label", { class: "muted" }, "colours ", colorSel), el("label", { class: "muted" }, "points ", sizeSel), info), meta);
  container.append(wrap);
  const gl = canvas.getContext("webgl", { antialias: false, preserveDrawingBuffer: true }) || canvas.getContext("experimental-webgl");
  if (!gl) {
    wrap.replaceChildren(el("p", { class: "error", text: "this browser offers no WebGL: the 3D view cannot be drawn" }));
    wrap.dataset.state = "error";
    return { show() {}, destroy() { wrap.remove(); } };
  }
  const prog = gl.createProgram();
  gl.attachShader(prog, compile(gl, gl.VERTEX_SHADER, VERT));
  gl.attachShader(prog, compile(gl, gl.FRAGMENT_SHADER, FRAG));
  gl.linkProgram(prog);
  if (!gl.getProgramParameter(prog, gl.LINK_STATUS)) throw new Error(`shader program: ${gl.getProgramInfoLog(prog)}`);
  const loc = {
    pos: gl.getAttribLocation(prog, "a_pos"), rgb: gl.getAttribLocation(prog, "a_rgb"), cat: gl.getAttribLocation(prog, "a_cat"),
    mvp: gl.getUniformLocation(prog, "u_mvp"), mode: gl.getUniformLocation(prog, "u_mode"), hrange: gl.getUniformLocation(prog, "u_hrange"),
    up: gl.getUniformLocation(prog, "u_up"), color: gl.getUniformLocation(prog, "u_color"), size: gl.getUniformLocation(prog, "u_size"),
  };
  const buf = { pos: gl.createBuffer(), rgb: gl.createBuffer(), cat: gl.createBuffer(), lines: gl.createBuffer(), lineRgb: gl.createBuffer() };
  let scene = null;     // {n, hasRgb, hasCat, up, bounds, lineCount, boxes}
  const view = { yaw: -Math.PI / 4, pitch: 0.5, dist: 3, target: [0, 0, 0] };
  let seq = 0, frame = 0;

  function setModes() {
    const modes = [];
    if (scene && scene.hasRgb) modes.push(["rgb", "rgb"]);
    if (scene && scene.hasCat) modes.push(["category", "category"]);
    modes.push(["height", "height"], ["plain", "one colour"]);
    const keep = colorSel.value;
    clear(colorSel).append(...modes.map(([v, t]) => el("option", { value: v, text: t })));
    colorSel.value = modes.some(([v]) => v === keep) ? keep : modes[0][0];
  }

  function resetView() {
    if (!scene) return;
    const b = scene.bounds;
    view.target = b.center.slice();
    view.dist = b.radius * 1.8;
    view.yaw = -Math.PI / 4;
    view.pitch = 0.45;
  }

  function draw() {
    frame = 0;
    const dpr = window.devicePixelRatio || 1;
    const w = Math.max(50, canvas.clientWidth || 480), h = Math.max(50, canvas.clientHeight || 320);
    if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) { canvas.width = Math.round(w * dpr); canvas.height = Math.round(h * dpr); }
    gl.viewport(0, 0, canvas.width, canvas.height);
    const bg = cssVar("--code") || "#f3f4f6";
    const m = /^#([0-9a-f]{6})$/i.exec(bg);
    const rgb = m ? [0, 2, 4].map((i) => parseInt(m[1].slice(i, i + 2), 16) / 255) : [0.95, 0.95, 0.96];
    gl.clearColor(rgb[0], rgb[1], rgb[2], 1);
    gl.clear(gl.COLOR_BUFFER_BIT | gl.DEPTH_BUFFER_BIT);
    if (!scene) return;
    gl.enable(gl.DEPTH_TEST);
    gl.useProgram(prog);
    const up = scene.up;
    // The eye orbits the target: yaw around the up axis, pitch towards it.
    const cp = Math.cos(view.pitch), sp = Math.sin(view.pitch), cy = Math.cos(view.yaw), sy = Math.sin(view.yaw);
    const off = up[2] ? [cp * cy, cp * sy, sp] : [cp * sy, sp, cp * cy];
    const eye = view.target.map((t, i) => t + off[i] * view.dist);
    const r = scene.bounds.radius;
    const proj = perspective(Math.PI / 4, canvas.width / canvas.height, view.dist * 0.01, view.dist * 100 + r * 10);
    gl.uniformMatrix4fv(loc.mvp, false, mul(proj, lookAt(eye, view.target, up)));
    const b = scene.bounds;
    const axis = up[2] ? 2 : 1;
    gl.uniform2f(loc.hrange, b.min[axis], b.max[axis]);
    gl.uniform3f(loc.up, up[0], up[1], up[2]);
    gl.uniform1f(loc.size, Number(sizeSel.value) * dpr);
    const accent = (cssVar("--accent") || "#2563eb").match(/^#([0-9a-f]{6})$/i);
    const one = accent ? [0, 2, 4].map((i) => parseInt(accent[1].slice(i, i + 2), 16) / 255) : [0.15, 0.39, 0.92];
    gl.uniform3f(loc.color, one[0], one[1], one[2]);
    const mode = { rgb: 0, category: 1, height: 2, plain: 3 }[colorSel.value] ?? 2;
    gl.uniform1f(loc.mode, mode);
    gl.bindBuffer(gl.ARRAY_BUFFER, buf.pos);
    gl.enableVertexAttribArray(loc.pos);
    gl.vertexAttribPointer(loc.pos, 3, gl.FLOAT, false, 0, 0);
    if (scene.hasRgb) {
      gl.bindBuffer(gl.ARRAY_BUFFER, buf.rgb);
      gl.enableVertexAttribArray(loc.rgb);
      gl.vertexAttribPointer(loc.rgb, 3, gl.UNSIGNED_BYTE, true, 0, 0);
    } else { gl.disableVertexAttribArray(loc.rgb); gl.vertexAttrib3f(loc.rgb, 0.5, 0.5, 0.5); }
    if (scene.hasCat) {
      gl.bindBuffer(gl.ARRAY_BUFFER, buf.cat);
      gl.enableVertexAttribArray(loc.cat);
      gl.vertexAttribPointer(loc.cat, 1, gl.FLOAT, false, 0, 0);
    } else { gl.disableVertexAttribArray(loc.cat); gl.vertexAttrib1f(loc.cat, 0); }
    gl.drawArrays(gl.POINTS, 0, scene.n);
    if (scene.lineCount) {
      // Boxes and mesh edges: the same program, colours per vertex.
      gl.uniform1f(loc.mode, 0);
      gl.disableVertexAttribArray(loc.cat);
      gl.bindBuffer(gl.ARRAY_BUFFER, buf.lines);
      gl.vertexAttribPointer(loc.pos, 3, gl.FLOAT, false, 0, 0);
      gl.bindBuffer(gl.ARRAY_BUFFER, buf.lineRgb);
      gl.enableVertexAttribArray(loc.rgb);
      gl.vertexAttribPointer(loc.rgb, 3, gl.UNSIGNED_BYTE, true, 0, 0);
      gl.drawArrays(gl.LINES, 0, scene.lineCount);
    }
    wrap.dataset.drawn = String((Number(wrap.dataset.drawn) || 0) + 1);
  }

  const redraw = () => { if (!frame) frame = requestAnimationFrame(draw); };

  function load(parsed) {
    const { positions, colors, categories, boxes = [], vectors = [], edges = null, up = [0, 0, 1] } = parsed;
    const n = Math.floor(positions.length / 3);
    gl.bindBuffer(gl.ARRAY_BUFFER, buf.pos);
    gl.bufferData(gl.ARRAY_BUFFER, positions, gl.STATIC_DRAW);
    if (colors) { gl.bindBuffer(gl.ARRAY_BUFFER, buf.rgb); gl.bufferData(gl.ARRAY_BUFFER, colors, gl.STATIC_DRAW); }
    if (categories) { gl.bindBuffer(gl.ARRAY_BUFFER, buf.cat); gl.bufferData(gl.ARRAY_BUFFER, categories, gl.STATIC_DRAW); }
    const lines = [], lineRgb = [];
    const edgeRgb = [150, 150, 160];
    if (edges) {
      for (let i = 0; i < edges.length; i++) {
        const v = edges[i];
        lines.push(positions[v * 3], positions[v * 3 + 1], positions[v * 3 + 2]);
        lineRgb.push(...edgeRgb);
      }
    }
    for (const box of boxes) {
      // Colours 0-255, or 0-1 when every component is at most 1 (W&B's box3d).
      let c = Array.isArray(box.color) && box.color.length >= 3 ? box.color.slice(0, 3).map(Number) : BOX_DEFAULT;
      if (c.every((v) => v <= 1)) c = c.map((v) => v * 255);
      const col = c.map((v) => Math.max(0, Math.min(255, Math.round(v))));
      for (const [a, b] of boxEdges(box.corners || [])) {
        lines.push(...box.corners[a].map(Number), ...box.corners[b].map(Number));
        lineRgb.push(...col, ...col);
      }
    }
    for (const v of vectors) {
      if (!Array.isArray(v.start) || !Array.isArray(v.end)) continue;
      lines.push(...v.start.map(Number), ...v.end.map(Number));
      lineRgb.push(230, 60, 60, 255, 200, 40);
    }
    gl.bindBuffer(gl.ARRAY_BUFFER, buf.lines);
    gl.bufferData(gl.ARRAY_BUFFER, new Float32Array(lines), gl.STATIC_DRAW);
    gl.bindBuffer(gl.ARRAY_BUFFER, buf.lineRgb);
    gl.bufferData(gl.ARRAY_BUFFER, new Uint8Array(lineRgb), gl.STATIC_DRAW);
    scene = { n, hasRgb: !!colors, hasCat: !!categories, up, bounds: bounds(positions), lineCount: lines.length / 3, boxes };
    setModes();
    resetView();
  }

  // Orbit by dragging (mouse, pen or touch), zoom with the wheel or a pinch of two fingers.
  const pointers = new Map();
  let pinch = 0;
  canvas.addEventListener("pointerdown", (ev) => { canvas.setPointerCapture(ev.pointerId); pointers.set(ev.pointerId, [ev.clientX, ev.clientY]); });
  canvas.addEventListener("pointermove", (ev) => {
    const last = pointers.get(ev.pointerId);
    if (!last) return;
    if (pointers.size === 2) {
      pointers.set(ev.pointerId, [ev.clientX, ev.clientY]);
      const [a, b] = [...pointers.values()];
      const d = Math.hypot(a[0] - b[0], a[1] - b[1]);
      if (pinch) { view.dist *= pinch / d; redraw(); }
      pinch = d;
      return;
    }
    view.yaw -= (ev.clientX - last[0]) * 0.008;
    view.pitch = Math.max(-1.55, Math.min(1.55, view.pitch + (ev.clientY - last[1]) * 0.008));
    pointers.set(ev.pointerId, [ev.clientX, ev.clientY]);
    redraw();
  });
  const release = (ev) => { pointers.delete(ev.pointerId); pinch = 0; };
  canvas.addEventListener("pointerup", release);
  canvas.addEventListener("pointercancel", release);
  canvas.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    view.dist *= Math.exp(Math.max(-1, Math.min(1, ev.deltaY * 0.0015)));
    redraw();
  }, { passive: false });
  canvas.addEventListener("dblclick", () => { resetView(); redraw(); });
  colorSel.addEventListener("change", redraw);
  sizeSel.addEventListener("change", redraw);
  const resize = typeof ResizeObserver === "function" ? new ResizeObserver(redraw) : null;
  if (resize) resize.observe(canvas);
  const scheme = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
  if (scheme && scheme.addEventListener) scheme.addEventListener("change", redraw);

  return {
    async show(rec, src) {
      const my = ++seq;
      const facts = [Number.isFinite(rec.points) ? `${fmtNum(rec.points)} points` : "", rec.boxes ? `${fmtNum(rec.boxes)} box${rec.boxes === 1 ? "" : "es"}` : "", rec.format || ""];
      clear(meta).append(metaLine(facts, rec.caption));
      if (!src) { wrap.dataset.state = "left-out"; canvas.hidden = true; meta.append(leftOutNote(rec, "3D scene")); return; }
      canvas.hidden = false;
      wrap.dataset.state = "loading";
      info.textContent = "loading…";
      const t0 = performance.now();
      try {
        const bytes = await bytesOf(src);
        if (my !== seq) return;
        const parsed = parseScene(bytes, rec.format);
        load(parsed);
        draw();
        wrap.dataset.points = String(scene.n);
        wrap.dataset.ms = String(Math.round(performance.now() - t0));
        wrap.dataset.state = "ready";
        const labels = {};
        for (const b of scene.boxes) if (b.label) labels[b.label] = (labels[b.label] || 0) + 1;
        const named = Object.entries(labels).map(([k, v]) => `${k} ${v}`).join(", ");
        info.textContent = `${scene.boxes.length ? `boxes: ${scene.boxes.length}${named ? ` (${named})` : ""} · ` : ""}drag to orbit, wheel to zoom, double-click to reset`;
      } catch (err) {
        if (my !== seq) return;
        wrap.dataset.state = "error";
        info.textContent = "";
        scene = null;
        draw();
        meta.append(el("p", { class: "error", text: `cannot draw this ${rec.format || "3D"} file: ${err.message}` }));
      }
    },
    destroy() {
      seq++;
      if (frame) cancelAnimationFrame(frame);
      if (resize) resize.disconnect();
      for (const b of Object.values(buf)) gl.deleteBuffer(b);
      gl.deleteProgram(prog);
      const lose = gl.getExtension("WEBGL_lose_context");
      if (lose) lose.loseContext();
      wrap.remove();
    },
  };
}
