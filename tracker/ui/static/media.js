// The Media panel: a run's audio, video, 3D and HTML records (tracker/ui/media.py), one step slider for the
// panel, each name at its logged step nearest to the slider's (and saying which). Only what is on screen is
// asked for: the records of the rows in view, and the bytes of the viewers drawn. The compare page lays the
// runs' media in columns at one step; a report (report.js) draws the same viewers from the data it carries.

import { audioViewer } from "./media/audio.js";
import { htmlViewer } from "./media/html.js";
import { object3dViewer } from "./media/object3d.js";
import { videoViewer } from "./media/video.js";
import { api, box, breakable, clear, dot, el, errorBox, fmtNum, loading, shortId } from "./util.js";

/** The slider waits this long for the next move before asking for the records of a step. */
const STEP_DEBOUNCE_MS = 120;

export const VIEWERS = { audio: audioViewer, video: videoViewer, object3d: object3dViewer, html: htmlViewer };
const KIND_LABEL = { audio: "audio", video: "video", object3d: "3D", html: "HTML" };

/** Where the bytes of a media record of run `id` are served. */
export function mediaUrl(id, sha) {
  return `/api/runs/${encodeURIComponent(id)}/media/${encodeURIComponent(sha)}`;
}

/** The index of `sorted` whose value is nearest to `v` (the earlier of two as near). */
export function nearestIndex(sorted, v) {
  let lo = 0, hi = sorted.length;
  while (lo < hi) { const mid = (lo + hi) >> 1; if (sorted[mid] < v) lo = mid + 1; else hi = mid; }
  if (lo === 0) return 0;
  if (lo === sorted.length) return sorted.length - 1;
  return sorted[lo] === v || sorted[lo] - v < v - sorted[lo - 1] ? lo : lo - 1;
}

/**
 * One step slider over `steps` (sorted): ◀ ▮━━○━ ▶ and "step S / last". `onStep(step, final)` is called at
 * once with final=false on every move and, after a pause of STEP_DEBOUNCE_MS, with final=true.
 */
export function stepSlider(steps, initial, onStep) {
  let last = steps.length - 1;
  let i = Math.max(0, Math.min(last, nearestIndex(steps, initial)));
  const range = el("input", { type: "range", min: 0, max: Math.max(0, last), step: 1, value: i, "aria-label": "media step",
    class: "media-range" });
  const prev = el("button", { type: "button", class: "icon media-prev", title: "previous step", "aria-label": "previous step", text: "◀" });
  const next = el("button", { type: "button", class: "icon media-next", title: "next step", "aria-label": "next step", text: "▶" });
  const label = el("span", { class: "media-step mono" });
  let timer = null;
  const node = el("div", { class: "media-slider" }, el("span", { class: "muted", text: "step" }), prev, range, next, label);
  const paint = () => {
    prev.hidden = range.hidden = next.hidden = last <= 0;  // one step: nothing to slide
    range.max = Math.max(0, last);
    range.value = i;
    prev.disabled = i <= 0;
    next.disabled = i >= last;
    label.textContent = last > 0 ? `${fmtNum(steps[i])} / ${fmtNum(steps[last])}` : fmtNum(steps[i]);
    node.dataset.step = String(steps[i]);
  };
  const set = (j, final = false) => {
    i = Math.max(0, Math.min(last, j));
    paint();
    onStep(steps[i], false);
    clearTimeout(timer);
    if (final) onStep(steps[i], true);
    else timer = setTimeout(() => onStep(steps[i], true), STEP_DEBOUNCE_MS);
  };
  range.addEventListener("input", () => set(Number(range.value)));
  prev.addEventListener("click", () => set(i - 1, true));
  next.addEventListener("click", () => set(i + 1, true));
  node.addEventListener("keydown", (ev) => {
    if (ev.target === range) return;  // the range input moves itself
    if (ev.key === "ArrowLeft") { ev.preventDefault(); set(i - 1, true); } else if (ev.key === "ArrowRight") { ev.preventDefault(); set(i + 1, true); }
  });
  return { node, set: (step, final = true) => set(nearestIndex(steps, step), final), get step() { return steps[i]; },
    get atLast() { return i === last; },
    /** New steps (a running run logged more): the slider keeps its step, or follows to the new last one. */
    extend(more, follow) {
      const at = steps[i];
      steps = more;
      last = steps.length - 1;
      if (follow) set(last, true);
      else { i = Math.max(0, nearestIndex(steps, at)); paint(); }
    },
    start() { set(i, true); }, destroy() { clearTimeout(timer); } };
}

/**
 * A cell showing one name of one run: a label (which step it shows) and its viewer, made when first shown
 * and kept (the 3D viewer keeps its WebGL context, the players their elements) while the kind stays.
 */
export class MediaCell {
  constructor(kind, srcOf, runLabel = null) {
    this.kind = kind;
    this.srcOf = srcOf;
    this.viewer = null;
    this.shown = null;
    this.stepNode = el("span", { class: "media-at muted" });
    this.body = el("div", { class: "media-body" });
    // On the compare page each cell names its run too (a phone stacks the columns, and drops their heads).
    this.node = el("div", { class: "media-cell", dataset: { kind, state: "empty" } }, runLabel, this.stepNode, this.body);
  }

  /** Show `item` ({kind, step, exact, count, records}) for the slider's `step`; nothing when absent. */
  show(item, step) {
    if (!item || !item.records || !item.records.length) {
      this.node.dataset.state = "empty";
      this.stepNode.textContent = "nothing logged";
      if (this.viewer) { this.viewer.destroy(); this.viewer = null; }
      clear(this.body);
      this.shown = null;
      return;
    }
    const rec = item.records[item.records.length - 1];
    this.node.dataset.shownStep = String(item.step);
    this.node.dataset.exact = item.exact ? "1" : "0";
    this.stepNode.textContent = item.exact ? `step ${fmtNum(item.step)}` : `step ${fmtNum(item.step)} (nearest to ${fmtNum(step)})`;
    if (item.count > 1) this.stepNode.textContent += ` · ${item.count} at this step, the last shown`;
    if (rec.error) {  // a report's file that could not be read when it was written
      if (this.viewer) { this.viewer.destroy(); this.viewer = null; }
      this.shown = null;
      this.node.dataset.state = "error";
      clear(this.body).append(errorBox(rec.error));
      return;
    }
    if (this.shown === rec.sha256 && this.viewer) { this.node.dataset.state = "shown"; return; }
    this.shown = rec.sha256;
    const make = VIEWERS[this.kind];
    if (!make) { clear(this.body).append(errorBox(`no viewer for ${this.kind}`)); return; }
    try {
      if (!this.viewer) { this.viewer = make(this.body); }
      this.viewer.show(rec, this.srcOf(rec));
      this.node.dataset.state = "shown";
    } catch (err) {
      this.node.dataset.state = "error";
      clear(this.body).append(errorBox(`cannot show ${this.kind}: ${err.message}`));
    }
  }

  error(message) {
    this.node.dataset.state = "error";
    this.stepNode.textContent = "";
    if (this.viewer) { this.viewer.destroy(); this.viewer = null; }
    this.shown = null;
    clear(this.body).append(errorBox(message));
  }

  destroy() { if (this.viewer) this.viewer.destroy(); this.viewer = null; }
}

/**
 * The rows of names for `runs` (one column each) over the union of their steps; `fetchAt(run, step, names)`
 * resolves to {name: item} of that run. Rows off screen are not asked for until they scroll into view.
 */
class MediaGrid {
  constructor({ runs, names, steps, fetchAt, srcOf, initialStep, columnHead, onStep }) {
    this.runs = runs;
    this.fetchAt = fetchAt;
    this.step = null;
    this.seq = 0;
    this.visible = new Set();
    this.rows = new Map();
    this.wanted = new Map();  // name -> the step its cells show (or are asked for)
    const multi = runs.length > 1;
    this.node = el("div", { class: `media-rows${multi ? " media-compare" : ""}` });
    this.node.style.setProperty("--media-cols", String(runs.length));
    if (multi && columnHead) this.node.append(el("div", { class: "media-row media-head" }, el("div", { class: "media-name" }), runs.map(columnHead)));
    for (const n of names) {
      const cells = runs.map((run) => new MediaCell(n.kind, (rec) => srcOf(run, rec),
        multi && columnHead ? el("div", { class: "media-cell-run" }, columnHead(run)) : null));
      const row = el("div", { class: "media-row", dataset: { name: n.name, kind: n.kind } },
        el("div", { class: "media-name" }, el("h3", { title: n.name }, breakable(n.name)),
          el("span", { class: "muted", text: `${KIND_LABEL[n.kind] || n.kind} · ${fmtNum(n.count)} logged` })),
        cells.map((c) => c.node));
      this.rows.set(n.name, { node: row, cells, kind: n.kind });
      this.node.append(row);
    }
    this.slider = stepSlider(steps, initialStep, (step, final) => {
      this.step = step;
      if (onStep) onStep(step, final);
      if (final) this.refresh();
    });
    this.observer = typeof IntersectionObserver === "function" ? new IntersectionObserver((entries) => {
      let grew = false;
      for (const e of entries) {
        const name = e.target.dataset.name;
        if (e.isIntersecting) { if (!this.visible.has(name)) { this.visible.add(name); grew = true; } } else this.visible.delete(name);
      }
      if (grew && this.step !== null) this.refresh();
    }, { rootMargin: "100px 0px" }) : null;
    for (const r of this.rows.values()) {
      if (this.observer) this.observer.observe(r.node); else this.visible.add(r.node.dataset.name);
    }
  }

  /**
   * Show the slider's step. The rows on screen now are measured here rather than waiting for the observer's
   * first report, which a busy page (charts being drawn) delivers only after its long tasks.
   */
  /** The run logged more steps of the same names: the slider grows (following when it stood at the last). */
  extend(steps) {
    const follow = this.slider.atLast;
    this.slider.extend(steps, follow);
  }

  start() {
    const h = window.innerHeight || document.documentElement.clientHeight;
    for (const [name, r] of this.rows) {
      const box = r.node.getBoundingClientRect();
      if (box.bottom >= -100 && box.top <= h + 100) this.visible.add(name);
    }
    this.slider.start();
  }

  /** Ask for the records of the visible rows whose cells do not show the slider's step yet. */
  async refresh() {
    const step = this.step;
    const names = [...this.visible].filter((n) => this.wanted.get(n) !== step);
    if (!names.length) return;
    for (const n of names) {
      this.wanted.set(n, step);
      // A cell that shows nothing yet says that it is coming; one that shows a step keeps it until the next.
      for (const c of this.rows.get(n).cells) if (c.node.dataset.state === "empty" && !c.shown) c.stepNode.textContent = "loading…";
    }
    const seq = ++this.seq;
    this.node.dataset.state = "loading";
    await Promise.all(this.runs.map(async (run, col) => {
      let got;
      try {
        got = await this.fetchAt(run, step, names);
      } catch (err) {
        if (this.destroyed) return;
        for (const n of names) {
          const r = this.rows.get(n);
          if (r && this.wanted.get(n) === step) { r.cells[col].error(`cannot load ${n} at step ${fmtNum(step)}: ${err.message}`); this.wanted.delete(n); }
        }
        return;
      }
      if (this.destroyed) return;
      for (const n of names) {
        const r = this.rows.get(n);
        if (r && this.wanted.get(n) === step) r.cells[col].show(got[n], step);
      }
    }));
    if (seq === this.seq && !this.destroyed) {
      this.node.dataset.state = "ready";
      this.node.dataset.step = String(step);
    }
  }

  destroy() {
    this.destroyed = true;
    this.slider.destroy();
    if (this.observer) this.observer.disconnect();
    for (const r of this.rows.values()) for (const c of r.cells) c.destroy();
  }
}

function readStep() {
  const v = new URLSearchParams(location.search).get("mstep");
  return v !== null && /^-?\d+$/.test(v) ? Number(v) : null;
}

function writeStep(step) {
  const url = new URL(location.href);
  url.searchParams.set("mstep", String(step));
  history.replaceState(history.state, "", url);
}

/** How often the panel of a running run asks whether new media were logged. */
const LIVE_MS = 5000;

/**
 * The run page's Media section: `ctx.id` the run; the index first, then the rows in view at the last step.
 * While the run runs, the index is asked for again every few seconds; new steps extend the slider (which
 * follows them when it stood at the last step).
 */
export function mediaSection(ctx) {
  const body = el("div", { class: "media-panel", dataset: { state: "loading" } }, loading("Loading media…"));
  const node = box("Media", body);
  node.id = "media";
  if (ctx.mediaGrid) ctx.mediaGrid.destroy();
  clearTimeout(ctx.mediaTimer);
  let shown = null;  // the index drawn: {names, steps}

  const draw = (index, first) => {
    const following = !shown || !ctx.mediaGrid || ctx.mediaGrid.step === shown.steps[shown.steps.length - 1];
    const keep = ctx.mediaGrid ? ctx.mediaGrid.step : null;
    if (ctx.mediaGrid) ctx.mediaGrid.destroy();
    ctx.mediaGrid = null;
    clear(body);
    shown = index;
    if (!index.names.length) { body.dataset.state = "empty"; body.append(el("p", { class: "muted", text: "No media logged yet." })); return; }
    const last = index.steps[index.steps.length - 1];
    const wanted = first ? readStep() : (following ? last : keep);
    const grid = new MediaGrid({
      runs: [{ id: ctx.id }], names: index.names, steps: index.steps, initialStep: wanted ?? last,
      // The records at the last step came with the index (grid.atIndex, renewed as the run grows): no request.
      fetchAt: (run, step, names) => (grid.atIndex && grid.atIndex.step === step ? Promise.resolve(grid.atIndex.media)
        : api(`/api/runs/${encodeURIComponent(run.id)}/media`, { step, names: names.join(",") }).then((r) => r.media)),
      srcOf: (run, rec) => mediaUrl(run.id, rec.sha256),
      onStep: (step, final) => { if (final) writeStep(step); },
    });
    grid.atIndex = index.at;
    ctx.mediaGrid = grid;
    body.dataset.state = "ready";
    const summary = (ix) => `${fmtNum(ix.names.length)} name${ix.names.length === 1 ? "" : "s"} · ${fmtNum(ix.steps.length)} step${ix.steps.length === 1 ? "" : "s"} with media`;
    grid.summary = el("span", { class: "muted", text: summary(index) });
    grid.summarize = (ix) => { grid.summary.textContent = summary(ix); };
    body.append(el("div", { class: "toolbar media-toolbar" }, grid.slider.node, grid.summary), grid.node);
    // A link to the panel (#media) opens the page scrolled to it, so its rows load first.
    if (first && location.hash === "#media") node.scrollIntoView({ block: "start" });
    grid.start();
  };

  const changed = (a, b) => a.steps.length !== b.steps.length || a.names.length !== b.names.length ||
    a.names.some((n, i) => n.count !== b.names[i].count || n.name !== b.names[i].name);
  const live = () => {
    if (ctx.stopped || !ctx.detail || !ctx.detail.info || ctx.detail.info.status !== "running") return;
    ctx.mediaTimer = setTimeout(() => {
      if (ctx.stopped) return;
      api(`/api/runs/${encodeURIComponent(ctx.id)}/media`).then((index) => {
        if (ctx.stopped) return;
        if (!shown || !changed(index, shown)) return;
        const sameNames = index.names.length === shown.names.length && index.names.every((n, i) => n.name === shown.names[i].name);
        if (sameNames && ctx.mediaGrid) {
          // Only more steps: the rows (and a clip playing in one) stay; the slider grows.
          ctx.mediaGrid.atIndex = index.at;
          ctx.mediaGrid.extend(index.steps);
          ctx.mediaGrid.summarize(index);
          for (const [i, n] of index.names.entries()) {
            const row = ctx.mediaGrid.rows.get(n.name);
            const count = row && row.node.querySelector(".media-name .muted");
            if (count) count.textContent = `${KIND_LABEL[n.kind] || n.kind} · ${fmtNum(n.count)} logged`;
            shown.names[i] = n;
          }
          shown = { ...index, names: shown.names };
          return;
        }
        draw(index, false);
      }).catch(() => { /* the next poll tries again */ }).finally(live);
    }, document.hidden ? LIVE_MS * 4 : LIVE_MS);
  };

  // The index the run page asked for with its other parts, used once; later draws ask again.
  const first = ctx.mediaIndex || api(`/api/runs/${encodeURIComponent(ctx.id)}/media`);
  ctx.mediaIndex = null;
  first.then((index) => {
    if (ctx.stopped) return;
    draw(index, true);
    live();
  }).catch((err) => {
    if (ctx.stopped) return;
    body.dataset.state = "error";
    clear(body).append(errorBox(`cannot load media: ${err.message}`));
    live();
  });
  return node;
}

/**
 * The compare page's Media box for `runs` ([{id, name}]): nothing when none of them logged media; else one
 * slider over every run's steps and one column per run. `colorOf(id)` is the run's colour.
 */
export function mediaCompareBox(runs, colorOf) {
  const body = el("div", { class: "media-panel", dataset: { state: "loading" } }, loading("Loading media…"));
  const node = box("Media", body);
  node.hidden = true;
  const state = { grid: null, stopped: false };
  Promise.all(runs.map((r) => api(`/api/runs/${encodeURIComponent(r.id)}/media`).catch((err) => ({ error: err.message })))).then((indexes) => {
    if (state.stopped) return;
    clear(body);
    const failed = indexes.map((x, i) => (x.error ? `${runs[i].name || shortId(runs[i].id)}: ${x.error}` : null)).filter(Boolean);
    const names = new Map();
    const steps = new Set();
    for (const x of indexes) {
      if (x.error) continue;
      for (const n of x.names) {
        const have = names.get(n.name);
        if (!have) names.set(n.name, { ...n }); else have.count += n.count;
      }
      for (const s of x.steps) steps.add(s);
    }
    if (failed.length) { node.hidden = false; body.append(errorBox(`cannot load media of ${failed.join("; ")}`)); }
    if (!names.size) { body.dataset.state = "empty"; return; }
    node.hidden = false;
    const all = [...steps].sort((a, b) => a - b);
    const wanted = readStep();
    state.grid = new MediaGrid({
      runs, names: [...names.values()], steps: all, initialStep: wanted ?? all[all.length - 1],
      fetchAt: (run, step, ns) => api(`/api/runs/${encodeURIComponent(run.id)}/media`, { step, names: ns.join(",") }).then((r) => r.media),
      srcOf: (run, rec) => mediaUrl(run.id, rec.sha256),
      columnHead: (run) => el("div", { class: "media-col-head", dataset: { run: run.id } }, dot(colorOf(run.id)), run.name || shortId(run.id)),
      onStep: (step, final) => { if (final) writeStep(step); },
    });
    body.dataset.state = "ready";
    body.append(el("div", { class: "toolbar media-toolbar" }, state.grid.slider.node,
      el("span", { class: "muted", text: "each run's media at its logged step nearest to the slider's" })), state.grid.node);
    state.grid.start();
  });
  return { node, destroy() { state.stopped = true; if (state.grid) state.grid.destroy(); } };
}

/**
 * A report's Media box (tracker/ui/reportmedia.py): `media` = {runs: [{id, names: [{name, kind, steps, items:
 * [{step, record, sha256, left_out?, poster?}]}]}], blobs: {key: data URI}, left_out: note}. Nothing is
 * fetched: sources are the data: URIs the file carries. One slider over every step the report holds.
 */
export function mediaReportBox(media, runs, colorOf) {
  const byRun = new Map(media.runs.map((m) => [m.id, m]));
  const shownRuns = runs.filter((r) => byRun.has(r.id));
  if (!shownRuns.length) return null;
  const names = new Map();
  const steps = new Set();
  for (const m of media.runs) {
    for (const n of m.names) {
      const have = names.get(n.name);
      if (!have) names.set(n.name, { name: n.name, kind: n.kind, count: n.steps }); else have.count += n.steps;
      for (const it of n.items) steps.add(it.step);
    }
  }
  const all = [...steps].sort((a, b) => a - b);
  const blobs = media.blobs || {};
  const itemsOf = (run, name) => ((byRun.get(run.id) || { names: [] }).names.find((n) => n.name === name) || { items: [] }).items;
  const grid = new MediaGrid({
    runs: shownRuns, names: [...names.values()], steps: all, initialStep: all[all.length - 1],
    fetchAt: async (run, step, ns) => {
      const out = {};
      for (const name of ns) {
        const items = itemsOf(run, name);
        if (!items.length) continue;
        const it = items[nearestIndex(items.map((x) => x.step), step)];
        out[name] = { kind: names.get(name).kind, step: it.step, exact: it.step === step, count: 1,
          records: [{ ...it.record, step: it.step, left_out: it.left_out, poster: it.poster ? blobs[it.poster] : undefined, error: it.error }] };
      }
      return out;
    },
    srcOf: (run, rec) => (rec.sha256 && blobs[rec.sha256]) || null,
    columnHead: (run) => el("div", { class: "media-col-head", dataset: { run: run.id } }, dot(colorOf(run.id)), run.name || shortId(run.id)),
  });
  const notes = media.left_out ? el("p", { class: "muted media-note", text: media.left_out }) : null;
  const node = box("Media", el("div", { class: "toolbar media-toolbar" }, grid.slider.node), notes, grid.node);
  node.classList.add("report-media");
  return { node, start: () => grid.start() };
}
