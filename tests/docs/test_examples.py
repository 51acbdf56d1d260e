"""Every Python and shell example of README.md and docs/ runs (tests/docs/examples.py finds them; the markers
are documented in docs/contributing.md)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from ..query.conftest import pg_server  # noqa: F401 - the session's PostgreSQL server, for needs=postgresql
from ..remote.conftest import server, server_factory  # noqa: F401 - a tracker server of the module, for needs=server
from .examples import REPO, Block, blocks_of, pages, run_page, scripts_of

#: needs= names that are not modules: what provides them.
SERVICES = {"postgresql", "server"}


def _page_ids() -> list[str]:
    """The pages with at least one block not marked skip."""
    return [p.relative_to(REPO).as_posix() for p in pages() if scripts_of(blocks_of(p))]


def test_markers_parse_and_every_skip_has_a_reason() -> None:
    every: list[Block] = []
    for page in pages():
        blocks = blocks_of(page)  # raises MarkerError naming page and line
        scripts_of(blocks)
        every += blocks
    assert every, "no examples found"
    for block in every:
        assert block.skip is None or len(block.skip) >= 8, f"{block.id}: say why the block is not run"
        for name in block.needs:
            assert name in SERVICES or name.isidentifier(), f"{block.id}: needs={name} is no service or module"


def _unmet(block: Block) -> str | None:
    for name in block.needs:
        if name == "server" and importlib.util.find_spec("httpx") is None:
            return "needs=server: the server's client tests need httpx"
        if name not in SERVICES and importlib.util.find_spec(name) is None:
            return f"needs={name}: not installed"
    return None


@pytest.mark.parametrize("page", _page_ids())
def test_examples_of_page_run(page: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    blocks = blocks_of(REPO / page)
    scripts = [s for s in scripts_of(blocks) if all(_unmet(b) is None for b in s.blocks)]
    if not scripts:
        unmet = sorted({_unmet(b) or "" for b in blocks} - {""})
        pytest.skip(f"{page}: every example needs what is not here: {', '.join(unmet)}")
    replace: dict[str, str] = {}
    if any("postgresql" in b.needs for s in scripts for b in s.blocks):
        from ..team.conftest import new_database

        server = request.getfixturevalue("pg_server")
        url = new_database(server)
        for s in scripts:
            for b in s.blocks:
                if "postgresql" in b.needs:
                    for found in sorted(set(_urls(b.code)), key=len, reverse=True):
                        replace[found] = url
    extra: dict[str, str] = {}
    if any("server" in b.needs for s in scripts for b in s.blocks):
        srv = request.getfixturevalue("server")
        key = srv.make_key("docs-" + re.sub(r"[^a-z0-9]+", "-", page), "admin")
        extra = {"TRACKER_URL": srv.url, "TRACKER_API_KEY": key}
    results = run_page(scripts, tmp_path, replace, extra_env=extra)
    failed = {k: v for k, v in results.items() if v is not None}
    assert not failed, "\n\n".join(f"=== example {k} failed:\n{v}" for k, v in failed.items())
    assert set(results) >= {s.id for s in scripts}


def _urls(code: str) -> list[str]:
    return re.findall(r"postgresql://[^\s\"')]+", code)
