// The Artifacts pages: every named artifact (type, versions, the latest, aliases); one name's versions
// (aliases, size, who made each, who used it) with the alias history and the lineage of its latest; one
// version's files (downloads), producer, consumers, alias history, metadata and lineage.
// Everything comes from /api/artifacts, /api/artifact?ref= and /api/lineage (tracker/ui/artifacts.py).

import { lineageBox } from "./lineage.js";
import { setQuery } from "./state.js";
import { api, append, box, clear, dot, el, errorBox, fmtAgo, fmtBytes, fmtTime, loading, runColor, shortId, statusBadge } from "./util.js";

/** The page of a name (`version` left out) or of one version. */
export function artifactHref(qualified, version) {
  return `/artifacts/${encodeURIComponent(qualified)}${version ? `/${encodeURIComponent(version)}` : ""}`;
}

function crumbsLink(text, href) {
  return el("a", { href, "data-link": true, text });
}

function runLink(run) {
  const label = run.name || shortId(run.id);
  return el("span", { class: "run-ref" }, dot(runColor(run.id), run.status),
    el("a", { href: `/runs/${encodeURIComponent(run.id)}`, "data-link": true, text: label, title: `${run.id} (${run.status})` }));
}

function aliasChips(aliases) {
  return el("span", { class: "chips" }, aliases.map((a) => el("span", { class: `tag alias${a === "latest" ? " latest" : ""}`, text: a })));
}

function runsCell(runs, max = 4) {
  if (!runs.length) return el("span", { class: "muted", text: "-" });
  const shown = runs.slice(0, max).map(runLink);
  return el("span", { class: "run-refs" }, shown, runs.length > max ? el("span", { class: "muted", text: ` +${runs.length - max}` }) : null);
}

// --- /artifacts ---------------------------------------------------------------------------------

/** `/artifacts`: names, types, versions, the latest, aliases; a type filter and a text filter in the URL. */
export function mountList(root, params, ctx) {
  ctx.setCrumbs(crumbsLink("runs", "/"), "artifacts");
  const q = new URLSearchParams(location.search);
  const state = { type: q.get("type") || "", q: q.get("q") || "" };
  const typeSel = el("select", { "aria-label": "type" });
  const filter = el("input", { type: "search", placeholder: "filter names…  ( / )", value: state.q, "data-filter": true, "aria-label": "filter" });
  const count = el("span", { class: "muted count" });
  const body = el("div", {}, loading("Loading artifacts…"));
  root.append(el("div", { class: "toolbar" }, typeSel, filter, count), body);
  let data = null;
  let stopped = false;

  const write = () => {
    const p = new URLSearchParams();
    if (state.type) p.set("type", state.type);
    if (state.q) p.set("q", state.q);
    setQuery(p);
  };
  const draw = () => {
    clear(body);
    if (!data.artifacts.length) {
      body.append(el("div", { class: "empty" }, el("h2", { text: "No artifacts yet" }),
        el("p", { text: "Log one from a run, then use it from another:" }),
        el("pre", { class: "code", text: 'art = run.log_artifact("data.csv", name="mnist", type="dataset", aliases=["raw"])\nds = other_run.use_artifact("mnist:latest")' })));
      count.textContent = "";
      return;
    }
    const needle = state.q.toLowerCase();
    const rows = data.artifacts.filter((a) => (!state.type || a.type === state.type) && (!needle || a.qualified.toLowerCase().includes(needle)));
    count.textContent = `${rows.length} of ${data.artifacts.length} name${data.artifacts.length === 1 ? "" : "s"}`;
    const head = el("tr", {}, ["name", "type", "versions", "latest", "aliases", "size", "updated"].map((h, i) =>
      el("th", { text: h, class: i === 2 || i === 5 ? "num" : "" })));
    const trs = rows.map((a) => el("tr", { dataset: { artifact: a.qualified } },
      el("td", {}, el("a", { href: artifactHref(a.qualified), "data-link": true, text: a.qualified })),
      el("td", {}, el("span", { class: "tag", text: a.type })),
      el("td", { class: "num", text: a.versions }),
      el("td", {}, el("a", { href: artifactHref(a.qualified, a.latest), "data-link": true, class: "mono", text: a.latest })),
      // Every alias, `latest` included, as `tracker artifact list` prints them.
      el("td", {}, el("span", { class: "chips" }, Object.entries(a.aliases).map(([k, v]) =>
        el("span", { class: `tag alias${k === "latest" ? " latest" : ""}`, title: `${k} names ${v}`, text: `${k}:${v}` })))),
      el("td", { class: "num", text: fmtBytes(a.size) }),
      el("td", { text: fmtAgo(a.updated), title: fmtTime(a.updated) })));
    body.append(box(null, el("div", { class: "table-wrap" }, el("table", { class: "grid artifacts-list" }, el("thead", {}, head), el("tbody", {}, trs)))));
  };
  typeSel.addEventListener("change", () => { state.type = typeSel.value; write(); draw(); });
  filter.addEventListener("input", () => { state.q = filter.value; write(); draw(); });
  api("/api/artifacts").then((d) => {
    if (stopped) return;
    data = d;
    typeSel.append(el("option", { value: "", text: "any type" }), ...d.types.map((t) => el("option", { value: t, text: t, selected: t === state.type })));
    draw();
  }).catch((err) => { if (!stopped) clear(body).append(errorBox(`cannot list artifacts: ${err.message}`)); });
  return { destroy() { stopped = true; } };
}

// --- /artifacts/NAME and /artifacts/NAME/VERSION --------------------------------------------------

function historyBox(history) {
  if (!history.length) return null;
  const head = el("tr", {}, ["when", "alias", "change", "by"].map((h) => el("th", { text: h })));
  const rows = history.slice().reverse().map((h) => el("tr", {},
    el("td", { text: fmtTime(h.time) }), el("td", {}, el("span", { class: "tag alias", text: h.alias })),
    el("td", { text: `${h.op === "set" ? "set on" : "removed from"} ${h.version || "(a version no longer here)"}` }),
    el("td", {}, h.how === "log" ? el("span", {}, "logged by ", runLink(h.run_info)) : el("span", { text: h.user || "-" }))));
  return box("Alias history", el("div", { class: "table-wrap" }, el("table", { class: "grid alias-history" }, el("thead", {}, head), el("tbody", {}, rows))));
}

function headerNode(doc, version) {
  const title = version ? `${doc.name}:${version.version}` : doc.name;
  const facts = [el("span", { class: "tag", text: doc.type }), doc.project ? el("span", { text: `project ${doc.project}` }) : null,
    el("span", { text: `${doc.count} version${doc.count === 1 ? "" : "s"}` })];
  if (version) facts.push(aliasChips(version.aliases), el("span", { text: fmtBytes(version.size) }),
    el("span", { class: "mono", title: version.sha256, text: `sha256 ${version.sha256.slice(0, 12)}` }),
    el("span", { text: version.stored === "reference" ? `a reference to ${version.reference}` : "stored in the store" }));
  return el("div", { class: "artifact-head" }, el("h1", { text: title }), el("div", { class: "facts" }, facts));
}

function versionsBox(doc) {
  const head = el("tr", {}, ["version", "aliases", "size", "sha256", "made by", "used by", "logged"].map((h, i) =>
    el("th", { text: h, class: i === 2 ? "num" : "" })));
  const rows = doc.versions.slice().reverse().map((v) => el("tr", { dataset: { version: v.version } },
    el("td", {}, el("a", { href: artifactHref(doc.qualified, v.version), "data-link": true, class: "mono", text: v.version })),
    el("td", {}, aliasChips(v.aliases)), el("td", { class: "num", text: fmtBytes(v.size) }),
    el("td", { class: "mono", title: v.sha256, text: v.sha256.slice(0, 12) }),
    el("td", {}, runLink(v.producer)), el("td", {}, runsCell(v.consumers)),
    el("td", { text: fmtAgo(v.created), title: fmtTime(v.created) })));
  return box("Versions", el("div", { class: "table-wrap" }, el("table", { class: "grid versions" }, el("thead", {}, head), el("tbody", {}, rows))));
}

function filesBox(version) {
  if (version.files_error) return box("Files", errorBox(version.files_error));
  const head = el("tr", {}, ["file", "size", "sha256", ""].map((h, i) => el("th", { text: h, class: i === 1 ? "num" : "" })));
  const rows = version.files.map((f) => el("tr", { dataset: { file: f.path } },
    el("td", { class: "mono", text: f.path }), el("td", { class: "num", text: fmtBytes(f.size) }),
    el("td", { class: "mono", title: f.sha256, text: f.sha256.slice(0, 12) }),
    el("td", {}, f.download ? el("a", { href: f.download, download: f.path.split("/").pop(), class: "download", text: "download" })
      : el("span", { class: "muted", text: "a reference: not in the store" }))));
  return box(`Files (${version.files.length})`, el("div", { class: "table-wrap" }, el("table", { class: "grid files" }, el("thead", {}, head), el("tbody", {}, rows))));
}

function usesBox(version) {
  const made = el("div", { class: "made-by" }, el("h3", { text: "Made by" }), runLink(version.producer),
    el("span", { class: "muted", text: ` · ${fmtTime(version.created)}` }), el("span", {}, " ", statusBadge(version.producer.status)));
  const others = version.loggers.filter((r) => r.id !== version.producer.id);
  const again = others.length ? el("p", { class: "muted" }, "Logged again by ", runsCell(others, 8)) : null;
  const used = el("div", { class: "used-by" }, el("h3", { text: `Used by (${version.consumers.length})` }),
    version.consumers.length ? el("ul", { class: "runs-list" }, version.consumers.map((r) => el("li", {}, runLink(r), " ", statusBadge(r.status))))
      : el("p", { class: "muted", text: "No run used this version yet (run.use_artifact)." }));
  return box("Producer and consumers", el("div", { class: "uses" }, made, again, used));
}

function metadataBox(version) {
  const meta = version.metadata && Object.keys(version.metadata).length ? version.metadata : null;
  if (!meta && !version.description) return null;
  return box("Description and metadata", version.description ? el("p", { text: version.description }) : null,
    meta ? el("table", { class: "kv" }, el("tbody", {}, Object.entries(meta).map(([k, v]) =>
      el("tr", {}, el("th", { text: k }), el("td", { class: "mono", text: typeof v === "string" ? v : JSON.stringify(v) }))))) : null);
}

/** `/artifacts/NAME[/VERSION]`: a name's versions, or one version. */
export function mount(root, params, ctx) {
  const { name, version } = params;
  const crumbs = [crumbsLink("runs", "/"), crumbsLink("artifacts", "/artifacts")];
  if (version) crumbs.push(crumbsLink(name, artifactHref(name)), el("span", { class: "crumb-name", text: version }));
  else crumbs.push(el("span", { class: "crumb-name", text: name }));
  ctx.setCrumbs(...crumbs);
  const body = el("div", { class: "artifact-page" }, loading("Loading the artifact…"));
  root.append(body);
  let stopped = false;
  api("/api/artifact", { ref: version ? `${name}:${version}` : name }).then((doc) => {
    if (stopped) return;
    clear(body);
    if (!version) {
      const latest = doc.versions[doc.versions.length - 1];
      append(body, [headerNode(doc, null), versionsBox(doc), historyBox(doc.history),
        lineageBox(`${doc.qualified}:${latest.version}`, ctx.navigate, { title: `Lineage of ${latest.version} (latest)` })]);
      return;
    }
    const v = doc.version;
    append(body, [headerNode(doc, v), filesBox(v), usesBox(v), metadataBox(v), historyBox(doc.history),
      lineageBox(`${doc.qualified}:${v.version}`, ctx.navigate)]);
  }).catch((err) => { if (!stopped) clear(body).append(errorBox(err.message)); });
  return { destroy() { stopped = true; } };
}
