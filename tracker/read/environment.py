"""A run's environment read back, and why two runs differ (``tracker env``, ``tracker diff``, the dashboard).

:func:`run_environment` gives the ``environment`` record of a run (its first
writer's; the other writers' are listed when they differ) with the package
list and the uncommitted diff read from their blobs. :func:`diff_runs` answers
"why do these two runs differ" section by section: config keys added, removed
and changed; packages added, removed and changed; git commit, dirty flag and
the difference of the two uncommitted diffs; Python, platform, GPUs, host and
command. A section whose parts are the same says so in one line. Both work
over either store: blobs are read through the reading protocol's ``BlobReader``.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from tracker.core.errors import StoreError
from tracker.core.text import flatten

ENVIRONMENT = "environment"
#: The most bytes of an uncommitted diff read back for showing (the blob itself is capped when written).
MAX_DIFF_READ = 16 * 1024 * 1024
#: At most this many lines of the difference of two diffs.
MAX_DIFF_LINES = 2000


def _read_blob(blobs: Any, sha: str | None, limit: int = MAX_DIFF_READ) -> tuple[bytes | None, str | None]:
    """The blob's bytes (at most ``limit``), or ``(None, why)``."""
    if not sha:
        return None, None
    try:
        with blobs.open(sha) as f:
            data = f.read(limit + 1)
    except (StoreError, OSError) as exc:
        return None, str(exc)
    return data[:limit], None


def package_key(name: str) -> str:
    """A distribution's name as pip compares names (PEP 503: case and runs of ``-_.`` do not matter)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def packages_of(blobs: Any, sha: str | None) -> dict[str, str] | None:
    """``{name: version}`` from a packages blob (``name==version`` lines), or ``None`` when unreadable."""
    data, _ = _read_blob(blobs, sha)
    if data is None:
        return None
    out = {}
    for line in data.decode("utf-8", "replace").splitlines():
        name, sep, version = line.partition("==")
        if sep and name:
            out[name] = version
    return out


def run_environment(view: Any, blobs: Any, *, with_diff: bool = True) -> dict[str, Any] | None:
    """The run's environment: its first writer's ``environment`` record, with ``packages`` as a list of
    ``{"name", "version"}``, ``diff`` (the uncommitted diff as text, when ``with_diff``) and ``writers``
    (every writer's host, Python, commit and packages blob, when there are several). ``None`` when the run
    recorded none. A blob that cannot be read leaves its part out and is named in ``problems``.
    """
    if ENVIRONMENT not in view.schemas():
        return None
    records = list(view.records(ENVIRONMENT))
    if not records:
        return None
    first = records[0]
    env = dict(first.data)
    env["writer"] = first.writer
    env["time"] = first.time
    problems: list[str] = []
    pk = env.get("packages")
    packages = packages_of(blobs, pk)
    if pk and packages is None:
        problems.append(f"the package list (blob {pk}) cannot be read")
    # By name, as a reader looks one up (psycopg before psycopg-binary), whatever order the blob holds.
    env["package_list"] = [{"name": n, "version": v} for n, v in sorted((packages or {}).items(),
                                                                        key=lambda kv: (package_key(kv[0]), kv[0]))]
    if with_diff and env.get("git_diff"):
        data, why = _read_blob(blobs, env["git_diff"])
        env["diff"] = data.decode("utf-8", "replace") if data is not None else None
        if why:
            problems.append(f"the uncommitted diff (blob {env['git_diff']}) cannot be read: {why}")
    if len(records) > 1:
        env["writers"] = [{"writer": r.writer, "host": r.data.get("host"), "python": r.data.get("python"),
                           "git_commit": r.data.get("git_commit"), "packages": r.data.get("packages"),
                           "gpus": r.data.get("gpus") or []} for r in records]
    env["problems"] = problems
    return env


# --- the diff of two runs -----------------------------------------------------------------------

def _changes(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    added = {k: b[k] for k in b if k not in a}
    removed = {k: a[k] for k in a if k not in b}
    changed = {k: [a[k], b[k]] for k in a if k in b and a[k] != b[k]}
    unchanged = sum(1 for k in a if k in b and a[k] == b[k])
    return {"added": added, "removed": removed, "changed": changed, "unchanged": unchanged}


def _gpu_text(env: dict[str, Any] | None) -> str | None:
    if not env:
        return None
    gpus = env.get("gpus") or []
    names: dict[str, int] = {}
    for g in gpus:
        n = str(g.get("name") or "GPU")
        names[n] = names.get(n, 0) + 1
    text = ", ".join(f"{c}x {n}" if c > 1 else n for n, c in names.items()) or "none"
    extra = [f"driver {env['gpu_driver']}" if env.get("gpu_driver") else "",
             f"CUDA {env['cuda']}" if env.get("cuda") else ""]
    return " · ".join([text, *[e for e in extra if e]])


def diff_runs(a: Any, b: Any, blobs_a: Any, blobs_b: Any | None = None) -> dict[str, Any]:
    """Why runs ``a`` and ``b`` differ, section by section (plain data; ``tracker diff --format json``).

    :returns: ``{"runs": [...], "sections": [{"name", "same": bool, "summary": str, ...}]}``; each section
        holds what differs (config and packages: ``added``, ``removed``, ``changed``, and how many are
        ``unchanged``; git: both commits,
        dirty flags and ``diff_of_diffs``; the facts: both values).
    """
    blobs_b = blobs_a if blobs_b is None else blobs_b
    ia, ib = a.info, b.info
    ea, eb = run_environment(a, blobs_a), run_environment(b, blobs_b)
    sections = []
    # config
    ca, cb = dict(flatten(ia.config or {})), dict(flatten(ib.config or {}))
    ch = _changes(ca, cb)
    n_diff = len(ch["added"]) + len(ch["removed"]) + len(ch["changed"])
    sections.append({"name": "config", "same": n_diff == 0, **ch,
                     "summary": f"same {ch['unchanged']} keys" if n_diff == 0 else
                     f"{len(ch['changed'])} changed, {len(ch['added'])} added, {len(ch['removed'])} removed"})
    # packages
    pa = {p["name"]: p["version"] for p in (ea or {}).get("package_list", [])} if ea else None
    pb = {p["name"]: p["version"] for p in (eb or {}).get("package_list", [])} if eb else None
    if pa is None or pb is None or (not pa and (ea or {}).get("packages")) or (not pb and (eb or {}).get("packages")):
        sections.append({"name": "packages", "same": False, "unknown": True,
                         "summary": "not recorded for " + _which(pa is None or not pa, pb is None or not pb)})
    else:
        pch = _changes(pa, pb)
        n_diff = len(pch["added"]) + len(pch["removed"]) + len(pch["changed"])
        sections.append({"name": "packages", "same": n_diff == 0, **pch,
                         "summary": f"same {pch['unchanged']}" if n_diff == 0 else
                         f"{len(pch['changed'])} changed, {len(pch['added'])} added, {len(pch['removed'])} removed"})
    # git
    sections.append(_git_section(ea, eb))
    # facts
    for name, get in (("python", lambda i, e: (e or {}).get("python") or (i.env or {}).get("python")),
                      ("platform", lambda i, e: (e or {}).get("platform") or (i.env or {}).get("platform")),
                      ("gpu", lambda i, e: _gpu_text(e)),
                      ("host", lambda i, e: (e or {}).get("host") or (i.env or {}).get("host")),
                      ("command", lambda i, e: _command(i, e))):
        va, vb = get(ia, ea), get(ib, eb)
        same = va == vb
        sections.append({"name": name, "same": same, "a": va, "b": vb,
                         "summary": f"same ({_short(va)})" if same else f"{_short(va)} -> {_short(vb)}"})
    runs = [{"id": i.id, "name": i.name, "project": i.project, "status": i.status} for i in (ia, ib)]
    return {"runs": runs, "sections": sections}


def _which(missing_a: bool, missing_b: bool) -> str:
    return "either run" if missing_a and missing_b else ("the first run" if missing_a else "the second run")


def _short(v: Any, width: int = 80) -> str:
    text = "-" if v is None else str(v)
    return text if len(text) <= width else text[: width - 3] + "..."


def _command(info: Any, env: dict[str, Any] | None) -> str | None:
    argv = (env or {}).get("command")
    if argv:
        argv = argv[1:]  # the interpreter is python's section; the command is what it ran
    else:
        argv = (info.env or {}).get("argv")
    return " ".join(str(x) for x in argv) if argv else None


def in_repository(env: dict[str, Any] | None) -> bool:
    """Whether an environment record says its run ran inside a git repository (whatever git then said)."""
    return bool(env and (env.get("git_root") or env.get("git_commit")))


#: What a run made outside any git repository is called, in ``tracker env``, ``tracker diff`` and on the pages.
NO_REPOSITORY = "not a git repository"


def _git_section(ea: dict[str, Any] | None, eb: dict[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": "git"}
    if not ea or not eb:
        out.update(same=False, summary="not recorded for " + _which(not ea, not eb))
        return out
    ra, rb = in_repository(ea), in_repository(eb)
    if not ra and not rb:
        out.update(same=True, summary=f"{NO_REPOSITORY} (either run)")
        return out
    if not ra or not rb:
        other = eb if not ra else ea
        where = f"commit {other['git_commit'][:12]}" if other.get("git_commit") else "a repository without a commit"
        out.update(same=False, summary=f"{_which(not ra, not rb)}: {NO_REPOSITORY}; the other: {where}",
                   a=_git_side(ea), b=_git_side(eb), diff_of_diffs="")
        return out
    if not (ea.get("git_commit") or eb.get("git_commit")):
        out.update(same=True, summary="both in a repository without a commit")
        return out
    ca, cb = ea.get("git_commit"), eb.get("git_commit")
    da, db = ea.get("diff") or "", eb.get("diff") or ""
    out.update(a=_git_side(ea), b=_git_side(eb))
    same_commit = ca == cb
    same_diff = da == db and ea.get("git_diff") == eb.get("git_diff")
    out["same"] = same_commit and same_diff
    if same_diff:
        out["diff_of_diffs"] = ""
    else:
        lines = list(difflib.unified_diff(da.splitlines(keepends=True), db.splitlines(keepends=True),
                                          fromfile="first run's uncommitted diff",
                                          tofile="second run's uncommitted diff", n=2))
        if len(lines) > MAX_DIFF_LINES:
            lines = lines[:MAX_DIFF_LINES] + [f"... {len(lines) - MAX_DIFF_LINES} more lines\n"]
        out["diff_of_diffs"] = "".join(lines)
    parts = [f"same commit {(ca or '-')[:12]}" if same_commit else
             f"commit {(ca or '-')[:12]} -> {(cb or '-')[:12]}"]
    if same_diff:
        parts.append("both clean" if not da else "same uncommitted diff")
    else:
        parts.append("uncommitted diffs differ" if da and db else
                     ("only the second run has uncommitted changes" if db else
                      "only the first run has uncommitted changes"))
    out["summary"] = ", ".join(parts)
    return out


def _git_side(env: dict[str, Any]) -> dict[str, Any]:
    """One run's git facts as a diff shows them; ``repository`` is False for a run made outside any."""
    return {"repository": in_repository(env), "commit": env.get("git_commit"), "branch": env.get("git_branch"),
            "dirty": env.get("git_dirty"), "remote": env.get("git_remote"),
            "files_changed": env.get("git_files_changed", 0)}


__all__ = ["ENVIRONMENT", "NO_REPOSITORY", "diff_runs", "in_repository", "packages_of", "run_environment"]
