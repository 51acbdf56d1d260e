"""docs/plugins.md documents every hook of tracker/host/hookspecs.py, with its arguments.

The hooks are read from hookspecs.py with ``ast``: every function decorated
``@hookspec`` (or ``@hookspec(...)``). The documentation is the hook table of
docs/plugins.md, one row per hook: ``| `tracker_x(arg, ...)` | when | what the
host does with it |``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import tracker

ROOT = Path(__file__).resolve().parents[2]
HOOKSPECS = Path(tracker.__file__).parent / "host" / "hookspecs.py"
DOC = ROOT / "docs" / "plugins.md"
ROW = re.compile(r"^\|\s*`(tracker_\w+)\(([^)]*)\)`\s*\|")


def hookspecs(source: str) -> dict[str, list[str]]:
    """``{hook name: argument names}`` of every ``@hookspec`` function, in file order."""
    hooks = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for dec in node.decorator_list:
            target = dec.func if isinstance(dec, ast.Call) else dec
            if isinstance(target, ast.Name) and target.id == "hookspec":
                args = node.args
                hooks[node.name] = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    return hooks


def documented(markdown: str) -> dict[str, list[str]]:
    """``{hook name: argument names}`` of every row of the hook table."""
    rows = {}
    for line in markdown.splitlines():
        m = ROW.match(line.strip())
        if m:
            rows[m.group(1)] = [a.strip() for a in m.group(2).split(",") if a.strip()]
    return rows


def missing_docs(hooks: dict[str, list[str]], rows: dict[str, list[str]]) -> list[str]:
    """What to change in docs/plugins.md so that its table matches the hooks."""
    out = []
    for name, args in hooks.items():
        signature = f"`{name}({', '.join(args)})`"
        if name not in rows:
            out.append(f"hook {name} is not documented: add a row "
                       f"'| {signature} | when it is called | what the host does with it |' "
                       f"to the hook table of docs/plugins.md (section '2. The hooks')")
        elif rows[name] != args:
            out.append(f"hook {name} takes ({', '.join(args)}) but docs/plugins.md shows "
                       f"({', '.join(rows[name])}): write {signature} in its row")
    for name in rows.keys() - hooks.keys():
        out.append(f"docs/plugins.md documents {name}, which tracker/host/hookspecs.py does not "
                   f"define: remove its row or add the hookspec")
    return out


def test_the_hooks_are_found() -> None:
    hooks = hookspecs(HOOKSPECS.read_text(encoding="utf-8"))
    assert {"tracker_configure", "tracker_schemas", "tracker_commands"} <= hooks.keys()
    assert hooks["tracker_subscribe"] == ["bus"]


def test_docs_document_every_hook_with_its_arguments() -> None:
    hooks = hookspecs(HOOKSPECS.read_text(encoding="utf-8"))
    rows = documented(DOC.read_text(encoding="utf-8"))
    problems = missing_docs(hooks, rows)
    assert not problems, "\n".join(problems)


SPECS = '''
@hookspec
def tracker_schemas() -> list: ...

@hookspec(historic=True)
def tracker_configure(config) -> None: ...

@hookspec(firstresult=True)
def tracker_panels(run, limit) -> list: ...

def helper(x): ...
'''


def test_a_new_hook_says_what_to_add() -> None:
    rows = documented("| `tracker_schemas()` | once | ... |\n| `tracker_configure(cfg)` | first | ... |\n"
                      "| `tracker_gone()` | never | ... |\n")
    problems = missing_docs(hookspecs(SPECS), rows)
    assert problems == [
        "hook tracker_configure takes (config) but docs/plugins.md shows (cfg): "
        "write `tracker_configure(config)` in its row",
        "hook tracker_panels is not documented: add a row '| `tracker_panels(run, limit)` | "
        "when it is called | what the host does with it |' to the hook table of "
        "docs/plugins.md (section '2. The hooks')",
        "docs/plugins.md documents tracker_gone, which tracker/host/hookspecs.py does not define: "
        "remove its row or add the hookspec",
    ]
