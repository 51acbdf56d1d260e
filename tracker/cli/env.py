"""``tracker env``: what a run ran on: Python, platform, GPUs, CUDA, packages, git and command."""

from __future__ import annotations

from typing import Any

import click

from tracker.cli import CliContext
from tracker.cli.options import fail, format_option, handle_errors
from tracker.cli.render import dumps
from tracker.cli.terminal import style
from tracker.core.text import when
from tracker.read.environment import NO_REPOSITORY, run_environment


def _size(n: Any) -> str:
    if not isinstance(n, int):
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


@click.command("env")
@click.argument("run")
@click.option("--diff", "show_diff", is_flag=True, help="Print the run's uncommitted diff (git diff HEAD) only.")
@click.option("--packages", "show_packages", is_flag=True,
              help="Print the installed packages only, as requirements (name==version).")
@format_option(("text", "json"), default="text")
@click.pass_obj
@handle_errors
def env_cmd(obj: CliContext, run: str, show_diff: bool, show_packages: bool, fmt: str) -> None:
    """Show what a run ran on: Python, platform, CPU, memory, GPUs, CUDA, packages, git and command.

    --diff prints the uncommitted change it ran with (git apply takes it);
    --packages prints its installed packages as a requirements file.

    \b
    Examples:
      tracker env 3f2a
      tracker env 3f2a --packages > requirements.txt
      tracker env 3f2a --diff | git apply
    """
    view = obj.store.run(run)
    env = run_environment(view, obj.store.blobs)
    if env is None:
        fail(f"run {view.id} has no environment record (it was recorded with environment=False, "
             "or by a tracker before 0.5)")
    for problem in env.get("problems", []):
        click.echo(f"tracker: warning: {problem}", err=True)
    if show_diff:
        if not env.get("git_diff"):
            fail(f"run {view.id} ran without uncommitted changes" if env.get("git_commit")
                 else f"run {view.id} did not run in a git repository")
        click.echo(env.get("diff") or "", nl=False)
        return
    if show_packages:
        for p in env.get("package_list", []):
            click.echo(f"{p['name']}=={p['version']}")
        return
    if fmt == "json":
        doc = {k: v for k, v in env.items() if k not in ("diff",)}
        doc["run"] = view.id
        click.echo(dumps(doc))
        return
    click.echo("\n".join(env_lines(env)))


def env_lines(env: dict[str, Any]) -> list[str]:
    """The environment as text, one fact per line, packages last."""
    def line(key: str, value: Any) -> str:
        return f"{style(key.ljust(9), dim=True)} {'-' if value in (None, '') else value}"

    gpus = env.get("gpus") or []
    out = [line("recorded", when(env.get("time"))),
           line("python", f"{env.get('python')} ({env.get('implementation') or 'Python'}) "
                          f"{env.get('executable') or ''}"),
           line("platform", env.get("platform")),
           line("cpu", f"{env.get('cpu') or '-'} · {env.get('cpu_count') or '?'} cores"),
           line("memory", _size(env.get("memory_bytes"))),
           line("gpus", ", ".join(f"{g.get('index')}: {g.get('name')} ({_size(g.get('memory_total_bytes'))})"
                                  for g in gpus) or "none")]
    if env.get("gpu_driver") or env.get("cuda"):
        out.append(line("cuda", f"{env.get('cuda') or '-'} (driver {env.get('gpu_driver') or '-'})"))
    out += [line("host", env.get("host")), line("command", " ".join(env.get("command") or [])),
            line("cwd", env.get("cwd"))]
    if env.get("git_commit") or env.get("git_root"):
        dirty = env.get("git_dirty")
        state = (f"dirty: {env.get('git_files_changed', 0)} files, +{env.get('git_insertions', 0)} "
                 f"-{env.get('git_deletions', 0)}, {_size(env.get('git_diff_bytes'))} of diff"
                 + (", cut" if env.get("git_diff_truncated") else "")) if dirty else "clean"
        out.append(line("git", f"{env.get('git_branch') or '(detached)'} @ {(env.get('git_commit') or '-')[:12]} "
                               f"({state})"))
        out.append(line("remote", env.get("git_remote")))
    else:
        out.append(line("git", NO_REPOSITORY))
    for w in env.get("warnings") or []:
        out.append(line("warning", w))
    if env.get("writers"):
        out.append(style("writers", dim=True))
        out += [f"  {w['writer']}  {w.get('host')}  python {w.get('python')}  "
                f"commit {(w.get('git_commit') or '-')[:12]}" for w in env["writers"]]
    packages = env.get("package_list", [])
    out.append(style(f"packages ({len(packages)})", dim=True))
    out += [f"  {p['name']}=={p['version']}" for p in packages]
    return out
