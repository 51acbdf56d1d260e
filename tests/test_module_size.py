"""No module of tracker/ is over 600 lines (STYLE.md): a module that grows past it is split along its seams."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LIMIT = 600


def test_no_module_is_over_600_lines() -> None:
    sizes = {p.relative_to(REPO).as_posix(): len(p.read_text(encoding="utf-8").splitlines())
             for p in (REPO / "tracker").rglob("*.py") if "__pycache__" not in p.parts}
    assert len(sizes) > 100
    over = {m: n for m, n in sorted(sizes.items()) if n > LIMIT}
    assert not over, f"modules over {LIMIT} lines (split each along its seams, keeping old import paths): {over}"
