// Page state in the URL: what a chart page shows (x axis, smoothing, log scales, zoom ranges, metric
// filter) is read from and written to the query string, so a copied URL reopens the same view.

/** Replace (or push, for a step the back button should undo) the query string; no entry when unchanged. */
export function setQuery(params, push = false) {
  const q = params.toString();
  const url = `${location.pathname}${q ? `?${q}` : ""}`;
  if (url !== location.pathname + location.search) history[push ? "pushState" : "replaceState"](null, "", url);
}

/**
 * The charts' state: {x: "step"|"time"|"defined" (define_metric's axes), xGiven (the URL names x), smoothing: 0..0.99 (0: off, the default), log: [metric...],
 * zoom: {metric: {min, max}}, q: metric filter}. `zoom=loss:100:2000` (repeated) holds each zoomed chart.
 */
export function readChartState(p = new URLSearchParams(location.search)) {
  const sm = Number(p.get("smooth"));
  const zoom = {};
  for (const z of p.getAll("zoom")) {
    const parts = z.split(":");
    if (parts.length < 3) continue;
    const max = Number(parts.pop()), min = Number(parts.pop());
    if (Number.isFinite(min) && Number.isFinite(max) && min < max) zoom[parts.join(":")] = { min, max };
  }
  const x = p.get("x");
  return { x: x === "time" || x === "defined" ? x : "step", xGiven: x !== null, smoothing: Number.isFinite(sm) && sm > 0 && sm < 1 ? sm : 0,
    log: p.getAll("log").filter(Boolean), zoom, q: p.get("q") || "" };
}

/** Write the charts' state after `base` (the page's own parameters, e.g. the compared runs). */
export function writeChartState(s, base = {}, push = false) {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(base)) p.set(k, v);
  if (s.x !== "step" || s.xGiven) p.set("x", s.x);
  if (s.smoothing > 0) p.set("smooth", String(s.smoothing));
  for (const name of s.log) p.append("log", name);
  for (const [name, r] of Object.entries(s.zoom)) p.append("zoom", `${name}:${Number(r.min.toPrecision(12))}:${Number(r.max.toPrecision(12))}`);
  if (s.q) p.set("q", s.q);
  setQuery(p, push);
}
