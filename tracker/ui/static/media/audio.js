// The audio viewer: the browser's player and the clip's waveform, drawn on a canvas from the samples Web
// Audio decodes (decodeAudioData), each column the min and max of its samples; a click on it seeks.

import { clear, cssVar, el, fmtDuration } from "../util.js";
import { bytesOf, failure, leftOutNote, metaLine } from "./common.js";

const WAVE_HEIGHT = 56;

function channelsText(n) {
  if (n === 1) return "mono";
  if (n === 2) return "stereo";
  return Number.isFinite(n) ? `${n} channels` : "";
}

function rateText(hz) {
  if (!Number.isFinite(hz)) return "";
  return hz % 1000 === 0 ? `${hz / 1000} kHz` : `${(hz / 1000).toFixed(1)} kHz`;
}

/** Min and max of each of `columns` runs of the (channel-averaged) samples of an AudioBuffer. */
export function peaks(buffer, columns) {
  const n = buffer.length;
  const chans = [];
  for (let c = 0; c < buffer.numberOfChannels; c++) chans.push(buffer.getChannelData(c));
  const lo = new Float32Array(columns), hi = new Float32Array(columns);
  const per = n / columns;
  for (let x = 0; x < columns; x++) {
    const a = Math.floor(x * per), b = Math.max(a + 1, Math.floor((x + 1) * per));
    let mn = Infinity, mx = -Infinity;
    for (let i = a; i < b && i < n; i++) {
      let v = 0;
      for (const ch of chans) v += ch[i];
      v /= chans.length;
      if (v < mn) mn = v;
      if (v > mx) mx = v;
    }
    lo[x] = mn === Infinity ? 0 : mn;
    hi[x] = mx === -Infinity ? 0 : mx;
  }
  return { lo, hi };
}

export function audioViewer(container) {
  const audio = el("audio", { controls: true, preload: "metadata", class: "media-audio-el" });
  const canvas = el("canvas", { class: "waveform", height: WAVE_HEIGHT, title: "click to play from there", "aria-label": "waveform" });
  const meta = el("div");
  const problem = el("p", { class: "error", role: "alert", hidden: true });
  const wrap = el("div", { class: "media-audio" }, el("div", { class: "media-audio-line" }, audio), canvas, problem, meta);
  const fail = (text) => { wrap.dataset.state = "error"; problem.textContent = text; problem.hidden = false; };
  container.append(wrap);
  let wave = null;  // {buffer} of the shown clip
  let seq = 0;
  let ctrl = null;

  const draw = () => {
    const w = Math.max(50, Math.floor(canvas.clientWidth || 480));
    const dpr = window.devicePixelRatio || 1;
    if (canvas.width !== Math.round(w * dpr)) { canvas.width = Math.round(w * dpr); canvas.height = Math.round(WAVE_HEIGHT * dpr); }
    const g = canvas.getContext("2d");
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, w, WAVE_HEIGHT);
    if (!wave) return;
    const { lo, hi } = wave.cols && wave.cols.lo.length === w ? wave.cols : (wave.cols = peaks(wave.buffer, w));
    const mid = WAVE_HEIGHT / 2, amp = WAVE_HEIGHT / 2 - 2;
    const played = audio.duration > 0 ? (audio.currentTime / audio.duration) * w : 0;
    const fg = cssVar("--accent") || "#2563eb", rest = cssVar("--muted") || "#6b7280";
    for (let x = 0; x < w; x++) {
      const y0 = mid - hi[x] * amp, y1 = mid - lo[x] * amp;
      g.fillStyle = x < played ? fg : rest;
      g.fillRect(x, y0, 1, Math.max(1, y1 - y0));
    }
  };

  const tick = () => draw();
  audio.addEventListener("loadedmetadata", () => { wrap.dataset.duration = String(audio.duration); tick(); });
  audio.addEventListener("timeupdate", tick);
  audio.addEventListener("seeked", tick);
  audio.addEventListener("error", () => { if (audio.getAttribute("src")) failure(audio.src, "clip").then(fail); });
  canvas.addEventListener("click", (ev) => {
    if (!(audio.duration > 0)) return;
    const r = canvas.getBoundingClientRect();
    audio.currentTime = Math.max(0, Math.min(1, (ev.clientX - r.left) / r.width)) * audio.duration;
  });
  const resize = typeof ResizeObserver === "function" ? new ResizeObserver(() => draw()) : null;
  if (resize) resize.observe(canvas);

  async function waveform(src, rate) {
    const my = ++seq;
    if (ctrl) ctrl.abort();
    ctrl = typeof AbortController === "function" ? new AbortController() : null;
    wrap.dataset.waveform = "loading";
    try {
      const bytes = await bytesOf(src, { signal: ctrl ? ctrl.signal : undefined });
      const Ctx = window.OfflineAudioContext || window.webkitOfflineAudioContext;
      const ac = new Ctx(1, 1, Math.max(8000, Math.min(96000, rate || 44100)));
      const buffer = await ac.decodeAudioData(bytes);
      if (my !== seq) return;
      wave = { buffer, cols: null };
      wrap.dataset.waveform = "drawn";
      draw();
    } catch (err) {
      if (my !== seq || (err && err.name === "AbortError")) return;
      wave = null;
      wrap.dataset.waveform = "error";
      canvas.title = `no waveform: ${err.message || err}`;
      if (problem.hidden) fail(`cannot draw the waveform: ${err.message || err}`);
      draw();
    }
  }

  return {
    show(rec, src) {
      wave = null;
      delete wrap.dataset.duration;
      delete wrap.dataset.state;
      problem.hidden = true;
      const facts = [rateText(rec.sample_rate), channelsText(rec.channels), Number.isFinite(rec.duration_s) ? fmtDuration(rec.duration_s) : "", rec.format || ""];
      clear(meta).append(metaLine(facts, rec.caption));
      if (!src) {
        audio.removeAttribute("src");
        audio.hidden = canvas.hidden = true;
        meta.append(leftOutNote(rec, "clip"));
        return;
      }
      audio.hidden = canvas.hidden = false;
      audio.src = src;
      draw();
      waveform(src, rec.sample_rate);
    },
    destroy() {
      seq++;
      if (ctrl) ctrl.abort();
      if (resize) resize.disconnect();
      audio.pause();
      audio.removeAttribute("src");
      audio.load();
      wrap.remove();
    },
  };
}
