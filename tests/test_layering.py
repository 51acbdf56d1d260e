"""The read core imports no capability folder, and the modules below the API import nothing above them.

Walks every import statement of each module (module level and inside
functions alike: a lazy import is still an arrow), resolving relative ones.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tracker

PACKAGE = Path(tracker.__file__).parent

#: The read core: the line format, segments, edit events, derived data, the reader.
READ_CORE = ["format", "segment", "edits", "records", "errors", "summary", "columns", "reader", "values", "bus",
             "schema", "config", "host", "pluginmanager", "hookspecs", "figures", "index"]
#: Capability folders, and the modules that stand above the core.
ABOVE = ["lifecycle", "query", "capture", "ui", "integrations", "alerts", "mcp", "cli", "api", "wandb", "store",
         "route", "writer"]


def modules(name: str) -> list[Path]:
    path = PACKAGE / name
    return sorted(path.rglob("*.py")) if path.is_dir() else [path.with_suffix(".py")]


def imported(path: Path) -> list[tuple[int, str]]:
    """``(line, dotted module)`` of every import in a module of the package, relative ones resolved."""
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    package = parts if path.name == "__init__.py" else parts[:-1]
    if path.name == "__init__.py":
        package = parts[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((node.lineno, mod))
            out.extend((node.lineno, f"{mod}.{a.name}") for a in node.names)
    return out


def offenders(names: list[str], forbidden: list[str]) -> list[str]:
    bad = []
    for name in names:
        for path in modules(name):
            for line, mod in imported(path):
                for f in forbidden:
                    target = f"tracker.{f}"
                    if mod == target or mod.startswith(target + "."):
                        bad.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {mod}")
    return bad


def test_read_core_imports_no_capability():
    assert offenders(READ_CORE, ABOVE) == []


def test_plugin_manager_does_not_import_the_host():
    assert offenders(["pluginmanager"], ["host"]) == []


def test_api_does_not_import_the_wandb_layer():
    assert offenders(["api"], ["wandb"]) == []


@pytest.mark.parametrize("capability", ["lifecycle", "query", "capture", "ui", "integrations"])
def test_the_check_sees_lazy_imports(capability, tmp_path, monkeypatch):
    # A module of the core with an import inside a function is caught: the walk would fail without it.
    fake = tmp_path / "tracker"
    fake.mkdir()
    (fake / "reader.py").write_text(f"def f():\n    from .{capability} import x\n")
    monkeypatch.setattr(f"{__name__}.PACKAGE", fake)
    assert offenders(["reader"], ABOVE) == [f"tracker/reader.py:2 imports tracker.{capability}",
                                            f"tracker/reader.py:2 imports tracker.{capability}.x"]
