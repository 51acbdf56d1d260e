"""mkdocs hook: the CLI reference page written from the click commands at build time.

docs/cli.md holds a marker line; this hook replaces it with one section per
command of ``tracker`` (``make_cli()`` walked, groups with their
subcommands), so the reference cannot drift from the commands.
"""

from __future__ import annotations

import html
import re
from typing import Any

MARKER = "<!-- cli-reference -->"


def _help_markdown(text: str) -> str:
    """Click's help text as markdown: ``\\b`` blocks (kept as typed) become code blocks."""
    out: list[str] = []
    for block in re.split(r"\n\s*\n", text.strip()):
        lines = block.splitlines()
        if lines and lines[0].strip() == "\b":
            body = "\n".join(lines[1:])
            indent = min((len(x) - len(x.lstrip()) for x in lines[1:] if x.strip()), default=0)
            body = "\n".join(x[indent:] for x in lines[1:])
            out.append(f"```text\n{body}\n```")
        else:
            out.append(" ".join(x.strip() for x in lines))
    return "\n\n".join(out)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").strip()


def _options(cmd: Any, ctx: Any) -> str:
    import click

    rows = []
    for param in cmd.get_params(ctx):
        if isinstance(param, click.Argument):
            continue
        record = param.get_help_record(ctx)
        if record is None:
            continue
        names, help_text = record
        if names in ("--help", "-h, --help"):  # every command has it; the page says so once
            continue
        code = html.escape(names).replace("|", "&#124;")  # a code span would show the table's escape
        rows.append(f"| <code>{code}</code> | {_cell(help_text)} |")
    if not rows:
        return ""
    return "| option | what it does |\n| --- | --- |\n" + "\n".join(rows)


def _section(cmd: Any, ctx: Any, path: list[str], out: list[str]) -> None:
    import click

    name = " ".join(path)
    level = "#" * min(2 + len(path) - 2, 4) if len(path) > 1 else "##"
    out.append(f"{level} `{name}`\n")
    usage = " ".join(cmd.collect_usage_pieces(ctx))
    out.append(f"```text\n{name} {usage}\n```\n")
    if cmd.help:
        out.append(_help_markdown(cmd.help) + "\n")
    options = _options(cmd, ctx)
    if options:
        out.append(options + "\n")
    if isinstance(cmd, click.Group):
        for sub in cmd.list_commands(ctx):
            child = cmd.get_command(ctx, sub)
            if child is None or child.hidden:
                continue
            _section(child, click.Context(child, info_name=sub, parent=ctx), path + [sub], out)


def reference() -> str:
    """Markdown for every core command of ``tracker``, in name order."""
    import click

    from tracker.cli import make_cli
    from tracker.cli.commands import CORE_COMMANDS

    cli = make_cli()
    ctx = click.Context(cli, info_name="tracker")
    out = ["## `tracker`\n", f"```text\ntracker {' '.join(cli.collect_usage_pieces(ctx))}\n```\n",
           _help_markdown(cli.help or "") + "\n", _options(cli, ctx) + "\n"]
    for name in sorted(CORE_COMMANDS):
        cmd = cli.get_command(ctx, name)
        if cmd is None or cmd.hidden:
            continue
        _section(cmd, click.Context(cmd, info_name=name, parent=ctx), ["tracker", name], out)
    return "\n".join(out)


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    """Replace the marker of docs/cli.md with the generated reference."""
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, reference())
