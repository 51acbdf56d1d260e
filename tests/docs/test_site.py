"""The documentation site: `mkdocs build --strict` passes, every page is in the navigation, the CLI reference
is written from the commands."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _nav_pages(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [p for item in nav for p in _nav_pages(item)]
    if isinstance(nav, dict):
        return [p for value in nav.values() for p in _nav_pages(value)]
    return []


def _config() -> dict:
    yaml = pytest.importorskip("yaml", reason="mkdocs reads its config with PyYAML (the docs extra)")
    text = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    return yaml.load(text, Loader=yaml.SafeLoader)


def test_every_page_is_in_the_navigation() -> None:
    listed = _nav_pages(_config()["nav"])
    pages = sorted(p.relative_to(REPO / "docs").as_posix() for p in (REPO / "docs").rglob("*.md"))
    missing = [p for p in pages if p not in listed]
    assert not missing, f"mkdocs.yml's nav lacks these pages of docs/ (add each under its task): {missing}"
    gone = [p for p in listed if not (REPO / "docs" / p).is_file()]
    assert not gone, f"mkdocs.yml's nav names pages that docs/ does not have: {gone}"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built once with --strict (a warning, such as a broken link, fails the build)."""
    pytest.importorskip("mkdocs", reason="the docs extra: pip install -e '.[docs]'")
    pytest.importorskip("material", reason="the docs extra: pip install -e '.[docs]'")
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(REPO / "mkdocs.yml"),
                           "-d", str(out)], cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout}\n{proc.stderr}"
    return out


def test_the_site_builds_strict_with_search(site: Path) -> None:
    assert (site / "index.html").is_file()
    assert (site / "search" / "search_index.json").is_file()
    assert "tracker runs" in (site / "search" / "search_index.json").read_text(encoding="utf-8")


def test_the_cli_reference_is_written_from_the_commands(site: Path) -> None:
    from tracker.cli.commands import CORE_COMMANDS

    html = (site / "cli" / "index.html").read_text(encoding="utf-8")
    assert "<!-- cli-reference -->" not in html, "the hook did not replace docs/cli.md's marker"
    for name in CORE_COMMANDS:
        assert f"tracker {name}" in html, f"the CLI reference lacks `tracker {name}`"
    # an option of a command, from its click declaration
    assert "--older-than" in html and "--group-by" in html


def test_the_front_page_is_the_readme(site: Path) -> None:
    html = (site / "index.html").read_text(encoding="utf-8")
    assert "<!-- readme -->" not in html
    assert 'src="img/groups-runs-page.png"' in html and "A first run" in html and "Where to go next" in html
    assert 'href="start/"' in html or 'href="start/#install"' in html


def test_readme_links_point_at_files_of_the_repository() -> None:
    import re

    text = (REPO / "README.md").read_text(encoding="utf-8")
    targets = [t.split("#", 1)[0] for t in re.findall(r"\]\(([^)\s]+)\)", text) if "://" not in t]
    assert targets, "README.md has no links"
    missing = [t for t in targets if t and not (REPO / t).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_the_changelog_page_is_changelog_md(site: Path) -> None:
    first = next(line for line in (REPO / "CHANGELOG.md").read_text(encoding="utf-8").splitlines()
                 if line.startswith("## "))
    html = (site / "changelog" / "index.html").read_text(encoding="utf-8")
    assert first[3:].strip().split()[0] in html
