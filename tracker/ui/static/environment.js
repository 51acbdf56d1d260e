// What a run ran on (the run page's Environment panel: facts, git with the uncommitted diff shown as a diff,
// packages searchable) and why two runs differ (the compare page's sections, as `tracker diff` prints them).

import { api, box, clear, dot, el, errorBox, fmtBytes, fmtTime, fmtValue, loading, shortId } from "./util.js";

/** What a run made outside any git repository is called (as `tracker env` and `tracker diff` say). */
const NO_REPOSITORY = "not a git repository";

/**
 * Whether line `i` is a file header of a unified diff: `--- a/x` followed by `+++ b/x` and a hunk (`@@`), or that
 * `+++ ` line. Anything else starting with `+++`/`---` is an added or removed line (`++++ b/x` in a diff of diffs).
 */
function fileHeader(lines, i) {
  const line = lines[i];
  if (line.startsWith("--- ")) return (lines[i + 1] || "").startsWith("+++ ") && (lines[i + 2] || "").startsWith("@@");
  if (line.startsWith("+++ ")) return (lines[i - 1] || "").startsWith("--- ") && (lines[i + 1] || "").startsWith("@@");
  return false;
}

/** A unified diff as lines coloured by kind (added, removed, hunk, file header). */
export function diffNode(text, { maxLines = 20000 } = {}) {
  const pre = el("pre", { class: "diff-text" });
  const lines = String(text || "").split("\n");
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  for (const [i, line] of lines.slice(0, maxLines).entries()) {
    let cls = "";
    if (fileHeader(lines, i) || line.startsWith("diff --git") || line.startsWith("index ")) cls = "diff-file";
    else if (line.startsWith("@@")) cls = "diff-hunk";
    else if (line.startsWith("+")) cls = "diff-add";
    else if (line.startsWith("-")) cls = "diff-del";
    else if (line.startsWith("# tracker:") || line.startsWith("Binary files")) cls = "diff-note";
    pre.append(el("span", { class: cls, text: line + "\n" }));
  }
  if (lines.length > maxLines) pre.append(el("span", { class: "diff-note", text: `… ${lines.length - maxLines} more lines\n` }));
  return pre;
}

function gpuText(env) {
  const counts = new Map();
  for (const g of env.gpus || []) counts.set(g.name || "GPU", (counts.get(g.name || "GPU") || 0) + 1);
  const names = [...counts].map(([n, c]) => (c > 1 ? `${c}x ${n}` : n));
  return names.length ? names.join(", ") : "no GPU";
}

function factsLine(env) {
  const parts = [`python ${env.python}`, `${env.platform || ""}`.split("-").slice(0, 1).join("") + ` ${env.machine || ""}`.trimEnd(),
    gpuText(env), env.gpu_driver ? `driver ${env.gpu_driver}` : null, env.cuda ? `CUDA ${env.cuda}` : null,
    env.cpu ? `${env.cpu} · ${env.cpu_count ?? "?"} cores` : null, env.memory_bytes ? `${fmtBytes(env.memory_bytes)} memory` : null];
  return parts.filter(Boolean).join(" · ");
}

/** The run page's Environment section: GET /api/runs/{id}/environment (the diff asked for when opened). */
export function environmentSection(ctx) {
  const body = el("div", {}, loading("Loading the environment…"));
  const node = box("Environment", body);
  node.dataset.state = "loading";
  const url = `/api/runs/${encodeURIComponent(ctx.id)}/environment`;
  api(url).then((res) => {
    const env = res.environment;
    clear(body);
    node.dataset.state = "ready";
    if (!env) {
      body.append(el("p", { class: "muted", text: "No environment recorded (the run started with environment=False, or with a tracker before 0.5)." }));
      return;
    }
    const kv = (k, v, cls) => (v === null || v === undefined || v === "" ? null : el("tr", {}, el("th", { text: k }), el("td", { class: cls, text: String(v) })));
    body.append(el("p", { class: "env-facts", text: factsLine(env) }));
    const rows = [kv("host", env.host), kv("command", (env.command || []).join(" "), "mono"), kv("working folder", env.cwd, "mono"),
      kv("python", `${env.python} (${env.implementation || "Python"}) ${env.executable || ""}`, "mono"), kv("recorded", fmtTime(env.time))];
    body.append(el("table", { class: "kv env-kv" }, el("tbody", {}, rows.filter(Boolean))));
    if (env.git_commit || env.git_root) body.append(gitBlock(env, url));
    else body.append(el("p", { class: "env-git", dataset: { part: "git" } }, el("strong", { text: "git " }), el("span", { class: "muted", text: NO_REPOSITORY })));
    for (const w of env.warnings || []) body.append(el("p", { class: "warning-line", text: `warning: ${w}` }));
    for (const p of env.problems || []) body.append(errorBox(p));
    body.append(packagesBlock(env.package_list || []));
    if (env.writers) {
      body.append(el("details", {}, el("summary", { text: `${env.writers.length} processes recorded their environment` }),
        el("table", { class: "grid" }, el("tbody", {}, env.writers.map((w) => el("tr", {}, el("td", { class: "mono", text: w.writer }),
          el("td", { text: w.host || "" }), el("td", { text: `python ${w.python || "?"}` }), el("td", { class: "mono", text: (w.git_commit || "").slice(0, 9) })))))));
    }
  }).catch((err) => {
    clear(body).append(errorBox(`cannot load the environment: ${err.message}`));
    node.dataset.state = "error";
  });
  return node;
}

function gitBlock(env, url) {
  const state = env.git_dirty
    ? `dirty: ${env.git_files_changed} file${env.git_files_changed === 1 ? "" : "s"}, +${env.git_insertions ?? "?"} -${env.git_deletions ?? "?"}`
    : "clean";
  const line = el("p", { class: "env-git", dataset: { part: "git" } }, el("strong", { text: "git " }),
    el("span", { class: "mono", text: `${env.git_branch || "(detached)"} @ ${(env.git_commit || "no commit").slice(0, 9)}` }), ` (${state})`,
    env.git_remote ? el("span", { class: "muted mono", text: ` · ${env.git_remote}` }) : null);
  const out = el("div", { class: "env-git-block" }, line);
  if (env.git_diff) {
    const holder = el("div", { class: "diff-holder", hidden: true });
    const button = el("button", { type: "button", text: "show diff" });
    button.addEventListener("click", async () => {
      if (!holder.hidden) { holder.hidden = true; button.textContent = "show diff"; return; }
      holder.hidden = false;
      button.textContent = "hide diff";
      if (holder.firstChild) return;
      holder.append(loading("Loading the diff…"));
      try {
        const res = await api(url, { diff: 1 });
        // Only nodes: Element.append() writes a null as the text "null".
        clear(holder);
        if (env.git_diff_truncated) holder.append(el("p", { class: "muted", text: `The diff was cut at [run] max_diff_bytes (it had ${fmtBytes(env.git_diff_bytes)}).` }));
        holder.append(diffNode(res.environment && res.environment.diff));
      } catch (err) { clear(holder).append(errorBox(`cannot load the diff: ${err.message}`)); }
    });
    line.append(" ", button);
    out.append(holder);
  }
  return out;
}

function packagesBlock(list) {
  const filter = el("input", { type: "search", placeholder: "filter packages", "aria-label": "filter packages" });
  const ul = el("ul", { class: "packages" });
  const count = el("span", { class: "muted" });
  const draw = () => {
    const q = filter.value.toLowerCase();
    const shown = q ? list.filter((p) => p.name.toLowerCase().includes(q)) : list;
    clear(ul).append(...shown.map((p) => el("li", {}, el("span", { class: "pkg-name", text: p.name }), " ", el("span", { class: "muted mono", text: p.version }))));
    count.textContent = q ? `${shown.length} of ${list.length}` : "";
  };
  filter.addEventListener("input", draw);
  draw();
  return el("div", { class: "env-packages" }, el("div", { class: "toolbar" }, el("strong", { text: `packages (${list.length})` }), filter, count), ul);
}

// --- the compare page ------------------------------------------------------------------------------

function sideTable(head, rows) {
  return el("div", { class: "table-wrap" }, el("table", { class: "grid diff" }, el("thead", {}, el("tr", {}, head.map((h) => el("th", { text: h })))),
    el("tbody", {}, rows)));
}

function sectionBody(s, names) {
  if (s.same || s.unknown) return null;
  if (s.name === "config" || s.name === "packages") {
    const rows = [];
    for (const [k, [a, b]] of Object.entries(s.changed || {})) rows.push(el("tr", { class: "changed" }, el("th", { text: `~ ${k}` }), el("td", { text: fmtValue(a) }), el("td", { text: fmtValue(b) })));
    for (const [k, v] of Object.entries(s.added || {})) rows.push(el("tr", { class: "added" }, el("th", { text: `+ ${k}` }), el("td", { class: "muted", text: "-" }), el("td", { text: fmtValue(v) })));
    for (const [k, v] of Object.entries(s.removed || {})) rows.push(el("tr", { class: "removed" }, el("th", { text: `- ${k}` }), el("td", { text: fmtValue(v) }), el("td", { class: "muted", text: "-" })));
    return sideTable([s.name === "config" ? "key" : "package", names[0], names[1]], rows);
  }
  if (s.name === "git" && s.a) {
    const row = (g) => (g.repository === false ? NO_REPOSITORY
      : `${(g.commit || "-").slice(0, 9)} on ${g.branch || "(detached)"}${g.dirty ? `, dirty (${g.files_changed} files)` : ""}`);
    return el("div", {}, sideTable(["", names[0], names[1]], [el("tr", {}, el("th", { text: "commit" }), el("td", { class: "mono", text: row(s.a) }), el("td", { class: "mono", text: row(s.b) }))]),
      s.diff_of_diffs ? el("details", { open: true }, el("summary", { text: "the difference of their uncommitted diffs" }), diffNode(s.diff_of_diffs)) : null);
  }
  // a fact that differs: its summary line says both values, unless they are long (then both in full)
  if ("a" in s && Math.max(String(s.a ?? "").length, String(s.b ?? "").length) > 80) return sideTable(["", names[0], names[1]], [el("tr", {}, el("th", { text: s.name }), el("td", { class: "mono", text: s.a ?? "-" }), el("td", { class: "mono", text: s.b ?? "-" }))]);
  return null;
}

/** The compare page's "Why they differ" section: GET /api/diff for the first run and a chosen other one. */
export function whyTheyDiffer(runs, colorOf) {
  const body = el("div", {}, loading("Comparing what the runs printed, ran on and changed…"));
  const node = box("Why they differ", body);
  node.dataset.section = "why";
  const label = (r) => `${r.name || shortId(r.id)} · ${shortId(r.id)}`;
  const pick = el("select", { "aria-label": "compare the first run with" }, runs.slice(1).map((r) => el("option", { value: r.id, text: label(r) })));
  const draw = async () => {
    const a = runs[0], b = runs.find((r) => r.id === pick.value) || runs[1];
    clear(body).append(loading("Comparing…"));
    let doc;
    try {
      doc = await api("/api/diff", { runs: `${a.id},${b.id}` });
    } catch (err) { clear(body).append(errorBox(`cannot compare: ${err.message}`)); return; }
    const names = [label(a), label(b)];
    clear(body).append(el("p", { class: "legend" }, dot(colorOf(a.id)), names[0], "  →  ", dot(colorOf(b.id)), names[1]),
      el("ul", { class: "why" }, doc.sections.map((s) => el("li", { class: s.same ? "same" : "differs", dataset: { part: s.name } },
        el("span", { class: "why-name", text: s.name }), el("span", { class: s.same ? "muted" : "", text: s.summary }), sectionBody(s, names)))));
    node.dataset.state = "ready";
  };
  if (runs.length > 2) body.before(el("div", { class: "toolbar" }, el("span", { class: "muted", text: `${label(runs[0])} against` }), pick));
  pick.addEventListener("change", draw);
  draw();
  return node;
}
