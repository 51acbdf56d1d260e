// The page: a small router over its views (runs, run, compare, sweeps, artifacts); everything comes from /api/.

import { el, clear, errorBox } from "./util.js";
import * as runsPage from "./runs.js";
import * as runPage from "./run.js";
import * as comparePage from "./compare.js";
import * as sweepPage from "./sweep.js";
import * as artifactsPage from "./artifacts.js";

const root = document.getElementById("app");
const crumbs = document.getElementById("crumbs");
let current = null;

function route(url) {
  const path = url.pathname.replace(/\/+$/, "") || "/";
  if (path === "/" || path === "/runs") return { page: runsPage, params: {} };
  const m = path.match(/^\/runs\/([^/]+)$/);
  if (m) return { page: runPage, params: { id: decodeURIComponent(m[1]) } };
  if (path === "/compare") return { page: comparePage, params: {} };
  if (path === "/sweeps") return { page: { mount: sweepPage.mountList }, params: {} };
  const sw = path.match(/^\/sweeps\/([^/]+)$/);
  if (sw) return { page: sweepPage, params: { id: decodeURIComponent(sw[1]) } };
  if (path === "/artifacts") return { page: { mount: artifactsPage.mountList }, params: {} };
  const art = path.match(/^\/artifacts\/([^/]+)(?:\/([^/]+))?$/);
  if (art) return { page: artifactsPage, params: { name: decodeURIComponent(art[1]), version: art[2] ? decodeURIComponent(art[2]) : null } };
  return null;
}

export function setCrumbs(...items) {
  clear(crumbs);
  items.forEach((item, i) => {
    if (i) crumbs.append(el("span", { class: "sep", text: "▸" }));
    crumbs.append(item instanceof Node ? item : el("span", { text: item }));
  });
}

export function setLive(on) {
  document.getElementById("live").hidden = !on;
}

function render() {
  if (current && current.destroy) current.destroy();
  current = null;
  setLive(false);
  clear(root);
  const r = route(new URL(location.href));
  if (!r) {
    setCrumbs("not found");
    root.append(errorBox(`no page at ${location.pathname}`), el("p", {}, el("a", { href: "/", "data-link": true, text: "All runs" })));
    return;
  }
  try {
    current = r.page.mount(root, r.params, { navigate, setCrumbs, setLive });
  } catch (err) {
    root.append(errorBox(err.message));
    console.warn(err);
  }
}

/** Go to a URL of the app (pushes a history entry unless `replace`). */
export function navigate(href, { replace = false } = {}) {
  const url = new URL(href, location.href);
  if (replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  render();
}

document.addEventListener("click", (ev) => {
  const a = ev.target.closest("a");
  if (!a || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || a.target || url.pathname.startsWith("/api/") || url.pathname.startsWith("/static/")) return;
  ev.preventDefault();
  navigate(url.href);
});

window.addEventListener("popstate", render);

// Keyboard: "/" focuses the page's filter, Esc clears it.
document.addEventListener("keydown", (ev) => {
  const filter = document.querySelector("[data-filter]");
  if (ev.key === "/" && filter && document.activeElement !== filter && !/^(INPUT|TEXTAREA|SELECT)$/.test(document.activeElement.tagName)) {
    ev.preventDefault();
    filter.focus();
    filter.select();
  } else if (ev.key === "Escape" && filter && (document.activeElement === filter || filter.value)) {
    filter.value = "";
    filter.dispatchEvent(new Event("input"));
    filter.blur();
  }
});

render();
