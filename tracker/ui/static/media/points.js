// The 3D formats read into what the 3D viewer draws: {positions: Float32Array (x, y, z per point),
// colors: Uint8Array (r, g, b) | null, categories: Float32Array | null, boxes: [{corners, color, label}],
// edges: vertex index pairs | null, up: the up axis}. Binary formats are read with typed arrays over
// the bytes as they came (no copy where the layout allows), so a million points parse in milliseconds.

const TEXT = new TextDecoder();

/**
 * The tracker's point layout (format "points"; tracker/capture/object3d.py): a 24-byte header (magic
 * TRKPTS01, n, flags 1 = colours 2 = categories, the JSON part's length), x y z as float32, the categories
 * as float32, the colours as uint8, padding to 4 bytes, then JSON {boxes, vectors}. Little-endian.
 */
export function parsePoints(buf) {
  const bytes = new Uint8Array(buf);
  if (bytes.length < 24 || TEXT.decode(bytes.subarray(0, 8)) !== "TRKPTS01") throw new Error("not a point cloud blob (its first bytes are not TRKPTS01)");
  const dv = new DataView(buf);
  const n = dv.getUint32(8, true), flags = dv.getUint32(12, true), j = dv.getUint32(16, true);
  let off = 24;
  const need = 24 + n * 12 + (flags & 2 ? n * 4 : 0) + (flags & 1 ? n * 3 : 0);
  if (bytes.length < need + j) throw new Error(`the point cloud ends early: ${n} points need ${need + j} bytes, there are ${bytes.length}`);
  const positions = new Float32Array(buf, off, n * 3);
  off += n * 12;
  let categories = null, colors = null;
  if (flags & 2) { categories = new Float32Array(buf, off, n); off += n * 4; }
  if (flags & 1) { colors = new Uint8Array(buf, off, n * 3); off += n * 3; }
  off += (4 - (off % 4)) % 4;
  const extra = j ? JSON.parse(TEXT.decode(bytes.subarray(off, off + j))) : {};
  return { positions, colors, categories, boxes: extra.boxes || [], vectors: extra.vectors || [], up: [0, 0, 1] };
}

const PLY_TYPES = {
  char: ["Int8", 1], int8: ["Int8", 1], uchar: ["Uint8", 1], uint8: ["Uint8", 1], short: ["Int16", 2], int16: ["Int16", 2],
  ushort: ["Uint16", 2], uint16: ["Uint16", 2], int: ["Int32", 4], int32: ["Int32", 4], uint: ["Uint32", 4], uint32: ["Uint32", 4],
  float: ["Float32", 4], float32: ["Float32", 4], double: ["Float64", 8], float64: ["Float64", 8],
};

/** PLY (ascii, binary little or big endian): the vertex element's x, y, z, red/green/blue and a label. */
export function parsePly(buf) {
  const bytes = new Uint8Array(buf);
  const headEnd = (() => {
    const probe = TEXT.decode(bytes.subarray(0, Math.min(bytes.length, 65536)));
    const i = probe.indexOf("end_header");
    if (i < 0) throw new Error("PLY without end_header");
    return probe.indexOf("\n", i) + 1;
  })();
  const lines = TEXT.decode(bytes.subarray(0, headEnd)).split(/\r?\n/);
  let format = "ascii";
  const elements = [];
  for (const line of lines) {
    const w = line.trim().split(/\s+/);
    if (w[0] === "format") format = w[1];
    else if (w[0] === "element") elements.push({ name: w[1], count: Number(w[2]), props: [] });
    else if (w[0] === "property" && elements.length) {
      const e = elements[elements.length - 1];
      if (w[1] === "list") e.props.push({ list: true, countType: w[2], type: w[3], name: w[4] });
      else e.props.push({ type: w[1], name: w[2] });
    }
  }
  const vi = elements.findIndex((e) => e.name === "vertex");
  if (vi < 0) throw new Error("PLY without vertex element");
  const vert = elements[vi];
  const n = vert.count;
  const names = vert.props.map((p) => p.name);
  const ix = (k) => names.indexOf(k);
  const [x, y, z] = [ix("x"), ix("y"), ix("z")];
  if (x < 0 || y < 0 || z < 0) throw new Error("PLY vertices without x, y, z");
  const r = ix("red") >= 0 ? ix("red") : ix("r"), g = ix("green") >= 0 ? ix("green") : ix("g"), b = ix("blue") >= 0 ? ix("blue") : ix("b");
  const lab = ["label", "category", "class", "scalar_label"].map(ix).find((i) => i >= 0) ?? -1;
  const positions = new Float32Array(n * 3);
  const colors = r >= 0 && g >= 0 && b >= 0 ? new Uint8Array(n * 3) : null;
  const categories = lab >= 0 ? new Float32Array(n) : null;
  const scale = (p) => (p && /float|double/.test(p.type) ? 255 : 1);
  const [sr, sg, sb] = [vert.props[r], vert.props[g], vert.props[b]].map(scale);
  if (format === "ascii") {
    const text = TEXT.decode(bytes.subarray(headEnd)).split(/\r?\n/);
    // Elements before the vertices (rare) are skipped line by line.
    let li = 0;
    for (let k = 0; k < vi; k++) li += elements[k].count;
    for (let i = 0; i < n; i++) {
      const v = text[li + i].trim().split(/\s+/).map(Number);
      positions[i * 3] = v[x]; positions[i * 3 + 1] = v[y]; positions[i * 3 + 2] = v[z];
      if (colors) { colors[i * 3] = v[r] * sr; colors[i * 3 + 1] = v[g] * sg; colors[i * 3 + 2] = v[b] * sb; }
      if (categories) categories[i] = v[lab];
    }
    return { positions, colors, categories, boxes: [], up: [0, 0, 1] };
  }
  if (vert.props.some((p) => p.list)) throw new Error("PLY vertices with list properties are not read");
  if (vi !== 0) throw new Error("binary PLY whose first element is not the vertices is not read");
  const little = format === "binary_little_endian";
  const offs = [];
  let stride = 0;
  for (const p of vert.props) {
    const t = PLY_TYPES[p.type];
    if (!t) throw new Error(`PLY property type ${p.type} is not known`);
    offs.push([`get${t[0]}`, stride]);
    stride += t[1];
  }
  const dv = new DataView(buf, headEnd);
  if (dv.byteLength < stride * n) throw new Error(`PLY ends early: ${n} vertices of ${stride} bytes need ${stride * n}, there are ${dv.byteLength}`);
  // The common layout (x, y, z first, float32, little endian, 4-byte aligned) is read without a loop of calls.
  const fast = little && offs[x][1] === 0 && offs[y][1] === 4 && offs[z][1] === 8 && offs[x][0] === "getFloat32" &&
    offs[y][0] === "getFloat32" && offs[z][0] === "getFloat32" && stride % 4 === 0 && headEnd % 4 === 0;
  if (fast) {
    const f = new Float32Array(buf, headEnd, (stride / 4) * n);
    const s = stride / 4;
    for (let i = 0; i < n; i++) { positions[i * 3] = f[i * s]; positions[i * 3 + 1] = f[i * s + 1]; positions[i * 3 + 2] = f[i * s + 2]; }
  } else {
    for (let i = 0, o = 0; i < n; i++, o += stride) {
      positions[i * 3] = dv[offs[x][0]](o + offs[x][1], little);
      positions[i * 3 + 1] = dv[offs[y][0]](o + offs[y][1], little);
      positions[i * 3 + 2] = dv[offs[z][0]](o + offs[z][1], little);
    }
  }
  if (colors || categories) {
    for (let i = 0, o = 0; i < n; i++, o += stride) {
      if (colors) {
        colors[i * 3] = dv[offs[r][0]](o + offs[r][1], little) * sr;
        colors[i * 3 + 1] = dv[offs[g][0]](o + offs[g][1], little) * sg;
        colors[i * 3 + 2] = dv[offs[b][0]](o + offs[b][1], little) * sb;
      }
      if (categories) categories[i] = dv[offs[lab][0]](o + offs[lab][1], little);
    }
  }
  return { positions, colors, categories, boxes: [], up: [0, 0, 1] };
}

/** Wavefront OBJ: its vertices (and vertex colours, when given) as points, its faces' edges as lines. */
export function parseObj(buf) {
  const pos = [], col = [], edges = [];
  let hasCol = true;
  for (const line of TEXT.decode(buf).split(/\r?\n/)) {
    if (line.startsWith("v ")) {
      const v = line.slice(2).trim().split(/\s+/).map(Number);
      pos.push(v[0], v[1], v[2]);
      if (v.length >= 6) col.push(v[3] * 255, v[4] * 255, v[5] * 255); else hasCol = false;
    } else if (line.startsWith("f ") && edges.length < 2_000_000) {
      const n = pos.length / 3;
      const idx = line.slice(2).trim().split(/\s+/).map((t) => { const k = parseInt(t, 10); return k < 0 ? n + k : k - 1; });
      for (let i = 0; i < idx.length; i++) edges.push(idx[i], idx[(i + 1) % idx.length]);
    }
  }
  return { positions: new Float32Array(pos), colors: hasCol && col.length ? new Uint8Array(col) : null, categories: null,
    edges: edges.length ? edges : null, boxes: [], up: [0, 1, 0] };
}

/** STL (binary, or ascii "solid"): the triangles' corners as points and their edges as lines. */
export function parseStl(buf) {
  const bytes = new Uint8Array(buf);
  const dv = new DataView(buf);
  const binary = bytes.length >= 84 && 84 + dv.getUint32(80, true) * 50 === bytes.length;
  const pos = [];
  if (binary) {
    const tris = dv.getUint32(80, true);
    const out = new Float32Array(tris * 9);
    for (let t = 0; t < tris; t++) {
      const o = 84 + t * 50 + 12;
      for (let k = 0; k < 9; k++) out[t * 9 + k] = dv.getFloat32(o + k * 4, true);
    }
    const edges = [];
    for (let t = 0; t < tris && edges.length < 2_000_000; t++) edges.push(t * 3, t * 3 + 1, t * 3 + 1, t * 3 + 2, t * 3 + 2, t * 3);
    return { positions: out, colors: null, categories: null, edges, boxes: [], up: [0, 0, 1] };
  }
  for (const m of TEXT.decode(buf).matchAll(/vertex\s+(\S+)\s+(\S+)\s+(\S+)/g)) pos.push(Number(m[1]), Number(m[2]), Number(m[3]));
  const edges = [];
  for (let t = 0; t * 3 + 2 < pos.length / 3; t++) edges.push(t * 3, t * 3 + 1, t * 3 + 1, t * 3 + 2, t * 3 + 2, t * 3);
  return { positions: new Float32Array(pos), colors: null, categories: null, edges, boxes: [], up: [0, 0, 1] };
}

const GLTF_COMPONENTS = { 5120: Int8Array, 5121: Uint8Array, 5122: Int16Array, 5123: Uint16Array, 5125: Uint32Array, 5126: Float32Array };
const GLTF_SIZES = { SCALAR: 1, VEC2: 2, VEC3: 3, VEC4: 4 };

/** The POSITION (and COLOR_0) of every mesh primitive of a glTF document whose buffers are `buffers`. */
function gltfPoints(doc, buffers) {
  const read = (ai) => {
    const acc = doc.accessors[ai];
    const view = doc.bufferViews[acc.bufferView];
    const Arr = GLTF_COMPONENTS[acc.componentType];
    const size = GLTF_SIZES[acc.type];
    const data = buffers[view.buffer];
    const start = (view.byteOffset || 0) + (acc.byteOffset || 0);
    const stride = view.byteStride || size * Arr.BYTES_PER_ELEMENT;
    const out = new Float32Array(acc.count * size);
    const dv = new DataView(data.buffer, data.byteOffset);
    const get = { 5120: "getInt8", 5121: "getUint8", 5122: "getInt16", 5123: "getUint16", 5125: "getUint32", 5126: "getFloat32" }[acc.componentType];
    for (let i = 0; i < acc.count; i++) for (let k = 0; k < size; k++) out[i * size + k] = dv[get](start + i * stride + k * Arr.BYTES_PER_ELEMENT, true);
    return { out, size, normalized: acc.normalized || acc.componentType === 5126 ? 1 : (Arr === Uint8Array ? 255 : 65535) };
  };
  const pos = [], col = [];
  let hasCol = true;
  for (const mesh of doc.meshes || []) {
    for (const prim of mesh.primitives || []) {
      const a = prim.attributes || {};
      if (a.POSITION === undefined) continue;
      const p = read(a.POSITION).out;
      for (let i = 0; i < p.length; i++) pos.push(p[i]);
      if (a.COLOR_0 !== undefined) {
        const c = read(a.COLOR_0);
        const scale = c.normalized === 1 ? 255 : 255 / c.normalized;
        for (let i = 0; i < p.length / 3; i++) col.push(c.out[i * c.size] * scale, c.out[i * c.size + 1] * scale, c.out[i * c.size + 2] * scale);
      } else hasCol = false;
    }
  }
  return { positions: new Float32Array(pos), colors: hasCol && col.length ? new Uint8Array(col) : null, categories: null, boxes: [], up: [0, 1, 0] };
}

/** GLB (binary glTF): its JSON chunk and its binary chunk. */
export function parseGlb(buf) {
  const dv = new DataView(buf);
  if (dv.getUint32(0, true) !== 0x46546c67) throw new Error("not a GLB file");
  let off = 12, doc = null, bin = null;
  while (off + 8 <= buf.byteLength) {
    const len = dv.getUint32(off, true), type = dv.getUint32(off + 4, true);
    const chunk = new Uint8Array(buf, off + 8, len);
    if (type === 0x4e4f534a) doc = JSON.parse(TEXT.decode(chunk));
    else if (type === 0x004e4942) bin = chunk;
    off += 8 + len;
  }
  if (!doc) throw new Error("GLB without its JSON chunk");
  return gltfPoints(doc, (doc.buffers || []).map((b) => (b.uri ? dataUri(b.uri) : bin)));
}

function dataUri(uri) {
  const m = /^data:[^,]*;base64,(.*)$/.exec(uri);
  if (!m) throw new Error("a glTF buffer outside the file (only embedded data: buffers are read)");
  const bin = atob(m[1]);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** glTF (JSON) with its buffers embedded as data: URIs. */
export function parseGltf(buf) {
  const doc = JSON.parse(TEXT.decode(buf));
  return gltfPoints(doc, (doc.buffers || []).map((b) => dataUri(b.uri || "")));
}

const PARSERS = { points: parsePoints, ply: parsePly, obj: parseObj, stl: parseStl, glb: parseGlb, gltf: parseGltf };

/** The scene in `buf`, read as `format`. */
export function parseScene(buf, format) {
  const parse = PARSERS[format];
  if (!parse) throw new Error(`no reader for the 3D format ${JSON.stringify(format)}`);
  return parse(buf);
}
