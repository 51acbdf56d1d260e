"""The floors of ``tracker/``: every import points down or sideways, and no import circle exists.

The import graph is built from the source with ``ast``: every import statement of every module,
at module level or inside a function (a lazy import is still an arrow), relative ones resolved,
``TYPE_CHECKING`` blocks included. A package's face (``__init__``) handing on its own submodules is
not an arrow back to it, as in ``../tools`` walks of the same graph.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tracker

PACKAGE = Path(tracker.__file__).parent

#: The floors, lowest first. A module may import its own floor and the floors below it.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("core", ("tracker.core",)),
    ("host", ("tracker.host",)),
    ("read", ("tracker.read",)),
    ("capture", ("tracker.capture",)),
    ("write", ("tracker.write",)),
    ("capabilities", ("tracker.lifecycle", "tracker.query", "tracker.team", "tracker.sweeps", "tracker.alerts",
                      "tracker.remote")),
    ("store", ("tracker.store",)),
    ("integrations", ("tracker.integrations",)),
    ("pages", ("tracker.ui", "tracker.mcp")),
    ("commands", ("tracker.cli",)),
    ("face", ("tracker", "tracker.__main__", "tracker.testing", "tracker.builtin")),
]


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path, name: str) -> list[tuple[int, str]]:
    """``(line, dotted name)`` of every import in one module (``from a import b`` gives ``a`` and ``a.b``)."""
    here = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here.split(".")
                base = base[: len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((node.lineno, mod))
            out.extend((node.lineno, f"{mod}.{a.name}") for a in node.names)
    return out


def graph(root: Path) -> dict[str, dict[str, int]]:
    """Module -> {imported module of the package: first line}, resolved to modules that exist."""
    files = {module_name(p, root): p for p in root.rglob("*.py") if "static" not in p.parts}
    out: dict[str, dict[str, int]] = {}
    for name, path in files.items():
        edges: dict[str, int] = {}
        for line, imp in imports_of(path, name):
            while imp and imp not in files:  # `a.b.c` where c is a name in module a.b
                imp = imp.rpartition(".")[0]
            if imp and imp != name and not imp.startswith(name + "."):
                edges.setdefault(imp, line)
        out[name] = edges
    return out


def layer_of(module: str) -> int:
    best, found = -1, None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and len(p) > best:
                best, found = len(p), i
    if found is None:
        raise AssertionError(f"{module} is on no floor: add its folder to LAYERS")
    return found


def upward(root: Path) -> list[str]:
    bad = []
    for name, edges in sorted(graph(root).items()):
        for target, line in sorted(edges.items()):
            if layer_of(target) > layer_of(name):
                bad.append(f"{name}:{line} imports {target} ({LAYERS[layer_of(name)][0]} -> "
                           f"{LAYERS[layer_of(target)][0]})")
    return bad


def circles(root: Path) -> list[list[str]]:
    """Strongly connected groups of two or more modules (Tarjan)."""
    g = graph(root)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return found


def test_every_module_is_on_a_floor():
    for name in graph(PACKAGE):
        layer_of(name)


def test_no_import_points_up():
    assert upward(PACKAGE) == []


def test_no_import_circle():
    assert circles(PACKAGE) == []


def test_each_floor_says_what_it_holds_and_may_import():
    for folder in ("core", "host", "read", "write", "capture", "lifecycle", "query", "team", "integrations",
                   "ui", "cli"):
        doc = ast.get_docstring(ast.parse((PACKAGE / folder / "__init__.py").read_text(encoding="utf-8")))
        assert doc and "import" in doc.lower(), f"tracker/{folder}/__init__.py does not say what it may import"


@pytest.mark.parametrize("where", ["module level", "inside a function", "under TYPE_CHECKING"])
def test_the_walk_sees_every_kind_of_import(where, tmp_path):
    # A fake package whose read floor imports the write floor: caught wherever the import stands.
    fake = tmp_path / "tracker"
    for folder in ("read", "write"):
        (fake / folder).mkdir(parents=True)
        (fake / folder / "__init__.py").write_text("")
    (fake / "__init__.py").write_text("")
    (fake / "write" / "api.py").write_text("from ..read import reader\n")
    body = {"module level": "from ..write.api import x\n",
            "inside a function": "def f():\n    from tracker.write import api\n",
            "under TYPE_CHECKING": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                    "    import tracker.write.api\n")}
    (fake / "read" / "reader.py").write_text(body[where])
    assert {b.split(":")[0] for b in upward(fake)} == {"tracker.read.reader"}
    assert circles(fake) == [["tracker.read.reader", "tracker.write.api"]]
