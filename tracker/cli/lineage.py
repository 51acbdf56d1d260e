"""``tracker lineage RUN | NAME[:VERSION]``: what a run used and made, and onwards, as a tree, JSON or Graphviz."""

from __future__ import annotations

from typing import Any

import click

from tracker.cli import CliContext
from tracker.cli.options import handle_errors
from tracker.cli.render import dumps


@click.command("lineage")
@click.argument("ref", metavar="RUN | NAME[:VERSION]")
@click.option("--depth", type=click.IntRange(min=1), default=3, show_default=True,
              help="How many versions to follow up (inputs) and down (outputs).")
@click.option("--format", "fmt", type=click.Choice(("text", "json", "dot")), default="text", show_default=True,
              help="Output format (dot: Graphviz, e.g. `| dot -Tsvg > lineage.svg`).")
@click.pass_obj
@handle_errors
def lineage_cmd(obj: CliContext, ref: str, depth: int, fmt: str) -> None:
    """Show a run's inputs and outputs (or a version's producer and consumers), as far as --depth.

    \b
    Examples:
      tracker lineage 3f2a                    # what the run used, who made that; what it made, who used it
      tracker lineage mnist-cnn:prod --format dot | dot -Tsvg > lineage.svg
    """
    store: Any = obj.store
    if not hasattr(store, "lineage"):
        from tracker.core.errors import TrackerError

        raise TrackerError(f"{store.path}: this store has no artifact registry")
    graph = store.lineage(ref, depth=depth)
    if fmt == "json":
        click.echo(dumps(graph))
    elif fmt == "dot":
        click.echo(to_dot(graph), nl=False)
    else:
        click.echo(to_text(graph, obj.short), nl=False)


def _run_label(node: dict[str, Any], short: Any) -> str:
    name = node.get("name")
    status = node.get("status")
    return f"run {short(node['run'])}" + (f" {name}" if name else "") + (f" ({status})" if status else "")


def _version_label(node: dict[str, Any], root_project: Any = None) -> str:
    aliases = node.get("aliases") or []
    where = "" if node.get("project") in (None, root_project) else f" [{node['project']}]"
    return f"{node['name']}:{node['version']} ({node['type']})" + where + (f"  {', '.join(aliases)}" if aliases else "")


def to_text(graph: dict[str, Any], short: Any = lambda r: r[:8]) -> str:
    """The graph as a tree from its root: a run's inputs (upstream) and outputs (downstream), or a
    version's producer and consumers."""
    nodes = {n["id"]: n for n in graph["nodes"]}
    into: dict[str, list[str]] = {}
    outof: dict[str, list[str]] = {}
    for e in graph["edges"]:
        outof.setdefault(e["from"], []).append(e["to"])
        into.setdefault(e["to"], []).append(e["from"])
    root = nodes[graph["root"]]
    project = root.get("project")
    lines: list[str] = []

    def label(nid: str) -> str:
        n = nodes[nid]
        return _run_label(n, short) if n["kind"] == "run" else _version_label(n, project)

    def walk(nid: str, edges: dict[str, list[str]], prefix: str, seen: set[str], verb: dict[str, str]) -> None:
        kids = [k for k in edges.get(nid, []) if k not in seen]
        for i, kid in enumerate(kids):
            last = i == len(kids) - 1
            kind = nodes[kid]["kind"]
            lines.append(f"{prefix}{'└─ ' if last else '├─ '}{verb[kind]}{label(kid)}")
            walk(kid, edges, prefix + ("   " if last else "│  "), seen | {kid}, verb)

    lines.append(label(graph["root"]))
    if root["kind"] == "run":
        ups = into.get(graph["root"], [])
        downs = outof.get(graph["root"], [])
        lines.append("├─ inputs" + ("" if ups else ": none"))
        walk(graph["root"], into, "│  ", {graph["root"]}, {"artifact": "used ", "run": "made by "})
        lines.append("└─ outputs" + ("" if downs else ": none"))
        walk(graph["root"], outof, "   ", {graph["root"]}, {"artifact": "made ", "run": "used by "})
    else:
        lines.append("├─ made by")
        walk(graph["root"], into, "│  ", {graph["root"]}, {"artifact": "used ", "run": ""})
        used = outof.get(graph["root"], [])
        lines.append("└─ used by" + ("" if used else ": none"))
        walk(graph["root"], outof, "   ", {graph["root"]}, {"artifact": "made ", "run": ""})
    return "\n".join(lines) + "\n"


def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def to_dot(graph: dict[str, Any]) -> str:
    """The graph in Graphviz's language: runs as rounded boxes, versions as ellipses, left to right."""
    out = ["digraph lineage {", "  rankdir=LR;", '  node [fontname="Helvetica"];']
    for n in graph["nodes"]:
        if n["kind"] == "run":
            text = f"{n.get('name') or n['run']}\\n{n['run'][:8]}"
            shape = 'shape=box, style="rounded,filled", fillcolor="#eef3fb"'
        else:
            aliases = ", ".join(n.get("aliases") or [])
            text = f"{n['name']}:{n['version']}\\n{n['type']}" + (f"\\n[{aliases}]" if aliases else "")
            shape = 'shape=ellipse, style=filled, fillcolor="#fdf6e3"'
        bold = ", penwidth=2" if n["id"] == graph["root"] else ""
        label = _dot_text(text).replace("\\\\n", "\\n")
        out.append(f'  "{_dot_text(n["id"])}" [{shape}{bold}, label="{label}"];')
    for e in graph["edges"]:
        style = ", style=dashed" if e["kind"] == "logged" else ""
        out.append(f'  "{_dot_text(e["from"])}" -> "{_dot_text(e["to"])}" [label="{e["kind"]}"{style}];')
    out.append("}")
    return "\n".join(out) + "\n"
