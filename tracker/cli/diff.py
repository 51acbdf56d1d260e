"""``tracker diff``: why two runs differ: config, packages, git, Python, platform, GPU, host, command."""

from __future__ import annotations

from typing import Any

import click

from tracker.cli import CliContext
from tracker.cli.options import format_option, handle_errors
from tracker.cli.render import cell, dumps
from tracker.cli.terminal import style
from tracker.read.environment import NO_REPOSITORY, diff_runs


@click.command("diff")
@click.argument("run_a")
@click.argument("run_b")
@format_option(("text", "json"), default="text")
@click.pass_obj
@handle_errors
def diff_cmd(obj: CliContext, run_a: str, run_b: str, fmt: str) -> None:
    """Say why two runs differ: config, packages, git commit and diff, Python, platform, GPU, host, command.

    Each part that is the same is one line ("packages: same 214"); a part
    that differs lists what was added (+), removed (-) and changed.
    --format json gives the same as data.

    \b
    Examples:
      tracker diff 3f2a 81c0
      tracker diff 3f2a 81c0 --format json | jq '.sections[] | select(.same | not) | .name'
    """
    a = obj.store.run(run_a)
    b = obj.store.run(run_b)
    doc = diff_runs(a, b, obj.store.blobs)
    if fmt == "json":
        click.echo(dumps(doc))
        return
    click.echo("\n".join(diff_lines(doc, obj.short)))


def file_header(lines: list[str], i: int) -> bool:
    """Whether line ``i`` of a unified diff is a file header: ``--- x`` followed by ``+++ y`` and a hunk, or that
    ``+++`` line. A line ``++++ b/x`` (an added header line, in a diff of diffs) is an added line."""
    line = lines[i]
    after = lines[i + 1] if i + 1 < len(lines) else ""
    if line.startswith("--- "):
        return after.startswith("+++ ") and i + 2 < len(lines) and lines[i + 2].startswith("@@")
    if line.startswith("+++ "):
        return i > 0 and lines[i - 1].startswith("--- ") and after.startswith("@@")
    return False


def diff_lines(doc: dict[str, Any], short: Any = str) -> list[str]:
    """The diff as text: one line per section, what differs indented below it."""
    ra, rb = doc["runs"]
    out = [f"{style('a', dim=True)} {short(ra['id'])} {ra.get('name') or ''}".rstrip(),
           f"{style('b', dim=True)} {short(rb['id'])} {rb.get('name') or ''}".rstrip()]
    for s in doc["sections"]:
        head = f"{s['name']}: {s['summary']}"
        out.append(style(head, dim=True) if s["same"] else style(head, bold=True))
        if s["same"]:
            continue
        if s["name"] in ("config", "packages"):
            sep = " = " if s["name"] == "config" else " "
            for k, (va, vb) in s.get("changed", {}).items():
                out.append(f"  ~ {k}{sep}{cell(va)} -> {cell(vb)}")
            for k, v in s.get("added", {}).items():
                out.append(style(f"  + {k}{sep}{cell(v)}", fg="green"))
            for k, v in s.get("removed", {}).items():
                out.append(style(f"  - {k}{sep}{cell(v)}", fg="red"))
        elif s["name"] == "git" and "a" in s:
            for side in ("a", "b"):
                g = s[side]
                if g.get("repository") is False:
                    out.append(f"  {side}: {NO_REPOSITORY}")
                    continue
                out.append(f"  {side}: {(g.get('commit') or '-')[:12]} on {g.get('branch') or '(detached)'}"
                           f"{', dirty' if g.get('dirty') else ''}")
            lines = (s.get("diff_of_diffs") or "").splitlines()
            for i, ln in enumerate(lines):
                color = None if file_header(lines, i) else "green" if ln.startswith("+") else \
                    "red" if ln.startswith("-") else None
                out.append("  " + (style(ln, fg=color) if color else ln))
        elif "a" in s and max(len(str(s["a"])), len(str(s["b"]))) > 80:  # the summary line cut them short
            out.append(f"  a: {'-' if s['a'] is None else s['a']}")
            out.append(f"  b: {'-' if s['b'] is None else s['b']}")
    return out
