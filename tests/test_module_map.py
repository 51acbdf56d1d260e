"""The module map (docs/architecture.md) lists every module of tracker/, and only those."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAP = "docs/architecture.md"
START, END = "<!-- module-map -->", "<!-- /module-map -->"


def _listed() -> list[str]:
    text = (REPO / MAP).read_text(encoding="utf-8")
    assert START in text and END in text, f"{MAP} lost its module map markers {START} ... {END}"
    table = text[text.index(START):text.index(END)]
    return re.findall(r"^\| `(tracker/[^`]+\.py)` \|", table, flags=re.M)


def _modules() -> list[str]:
    return sorted(p.relative_to(REPO).as_posix() for p in (REPO / "tracker").rglob("*.py")
                  if "__pycache__" not in p.parts)


def _suggested_line(module: str) -> str:
    doc = ast.get_docstring(ast.parse((REPO / module).read_text(encoding="utf-8"))) or "what it holds"
    return f"| `{module}` | {doc.splitlines()[0].rstrip('.')} |"


def test_every_module_is_listed() -> None:
    listed = set(_listed())
    missing = [m for m in _modules() if m not in listed]
    lines = "\n".join(_suggested_line(m) for m in missing)
    assert not missing, f"{MAP}'s module map (between {START} and {END}) lacks these modules; add:\n{lines}"


def test_every_listed_module_exists() -> None:
    gone = [m for m in _listed() if not (REPO / m).is_file()]
    assert not gone, (f"{MAP}'s module map lists modules that do not exist; remove these lines (or fix the "
                      "path):\n" + "\n".join(f"| `{m}` | ..." for m in gone))


def test_each_module_is_listed_once() -> None:
    listed = _listed()
    twice = sorted({m for m in listed if listed.count(m) > 1})
    assert not twice, f"{MAP}'s module map lists these modules more than once: {twice}"
