"""Plugins and examples use only the public API: names in ``tracker.__all__``.

Every module under plugins/ and examples/ is read with ``ast`` (nothing is
imported), and each use of ``tracker`` is checked: ``from tracker import X``
and ``tracker.X`` need ``X`` in ``tracker.__all__``; ``from tracker.M import
Y`` and ``import tracker.M`` need ``M`` to be a public module (in
``tracker.__all__``, like ``validators``, or one of the subpackages the
contract names for import, like ``tracker.integrations.lightning``).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import tracker

ROOT = Path(__file__).resolve().parents[2]
CHECKED = ("plugins", "examples")
PUBLIC = frozenset(tracker.__all__)
# Subpackages DESIGN.md tells users to import from by their dotted name:
# ``from tracker.integrations.keras import TrackerCallback``, ``tracker.ui.create_app``,
# and the pytest fixtures of ``tracker.testing``.
PUBLIC_SUBPACKAGES = frozenset({"integrations", "ui", "testing"})
SKIPPED_PARTS = frozenset({"build", "dist", "__pycache__", ".venv", "node_modules"})


def modules() -> list[Path]:
    """Every Python file under plugins/ and examples/, build folders left out."""
    found = []
    for top in CHECKED:
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = path.relative_to(ROOT).parts
            if SKIPPED_PARTS.intersection(parts) or any(p.endswith(".egg-info") for p in parts):
                continue
            found.append(path)
    return found


def _public_module(dotted: str) -> bool:
    """Whether ``tracker.<dotted>`` may be imported: its first part is public."""
    first = dotted.split(".")[0]
    return first in PUBLIC_SUBPACKAGES or first in PUBLIC


def private_uses(source: str, filename: str) -> list[str]:
    """One line per use of a name outside the public API: ``file:line: what``."""
    tree = ast.parse(source, filename=filename)
    bound: set[str] = set()  # local names bound to the ``tracker`` module itself
    problems: list[str] = []

    def bad(node: ast.AST, text: str) -> None:
        problems.append(f"{filename}:{node.lineno}: {text}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "tracker":
                    bound.add(alias.asname or "tracker")
                elif alias.name.startswith("tracker."):
                    sub = alias.name.removeprefix("tracker.")
                    if not _public_module(sub):
                        bad(node, f"`import {alias.name}`: tracker.{sub} is not public "
                                  f"(use names in tracker.__all__)")
                    elif alias.asname is None:
                        bound.add("tracker")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "tracker":
                for alias in node.names:
                    if alias.name not in PUBLIC:
                        bad(node, f"`from tracker import {alias.name}`: {alias.name} is not "
                                  f"in tracker.__all__")
            elif node.module.startswith("tracker."):
                sub = node.module.removeprefix("tracker.")
                if not _public_module(sub):
                    names = ", ".join(a.name for a in node.names)
                    bad(node, f"`from {node.module} import {names}`: tracker.{sub} is not "
                              f"public (import these from tracker, if tracker.__all__ has them)")
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in bound and node.attr not in PUBLIC
                and node.attr not in PUBLIC_SUBPACKAGES):
            bad(node, f"`{node.value.id}.{node.attr}`: {node.attr} is not in tracker.__all__")
    return problems


def test_there_are_modules_to_check() -> None:
    found = {p.relative_to(ROOT).parts[:2] for p in modules()}
    for plugin in ("fft_study", "ptq", "phase_trainer", "quant_analysis", "third_party_plugin"):
        assert any(plugin in parts for parts in found), plugin


def test_plugins_and_examples_use_only_public_names() -> None:
    problems = []
    for path in modules():
        problems += private_uses(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert not problems, "private names of tracker used:\n" + "\n".join(problems)


@pytest.mark.parametrize(("source", "expected"), [
    ("from tracker.host import Host\n", "x.py:1: `from tracker.host import Host`"),
    ("from tracker import Run, _private\n", "x.py:1: `from tracker import _private`"),
    ("import tracker\n\ntracker.host.Host()\n", "x.py:3: `tracker.host`"),
    ("import tracker as t\nt.api.Run\n", "x.py:2: `t.api`"),
    ("import tracker.reader\n", "x.py:1: `import tracker.reader`"),
    ("def f():\n    from tracker.schema import Schema\n", "x.py:2: `from tracker.schema"),
])
def test_the_check_names_file_line_and_name(source: str, expected: str) -> None:
    (problem,) = private_uses(source, "x.py")
    assert problem.startswith(expected)


@pytest.mark.parametrize("source", [
    "import tracker\ntracker.start_run\n",
    "from tracker import Schema, validators as v\n",
    "from tracker.validators import non_negative\n",
    "from tracker.integrations.lightning import TrackerLogger\n",
    "import tracker_ptq\nfrom tracker_ptq.record import SCHEMAS\n",
    "from . import record\n",
])
def test_public_uses_pass(source: str) -> None:
    assert private_uses(source, "x.py") == []
