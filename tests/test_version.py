"""One version in one place: tracker/core/version.py, the package metadata, tracker.__version__, `tracker --version`
and CHANGELOG.md's newest heading agree."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

import tracker
from tracker.core.version import __version__

from .childenv import child_environ

REPO = Path(__file__).resolve().parents[1]


def _changelog_version() -> str:
    for line in (REPO / "CHANGELOG.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            return line[3:].split()[0]
    raise AssertionError("CHANGELOG.md has no `## VERSION` heading")


def test_the_version_is_changelogs_newest_heading() -> None:
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__), __version__
    assert _changelog_version() == __version__, (
        f"CHANGELOG.md's newest heading is {_changelog_version()}, tracker/core/version.py says {__version__}")
    assert tracker.__version__ == __version__


def test_the_package_metadata_reads_the_version_file() -> None:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^dynamic = \["version"\]', text, flags=re.M), "pyproject.toml: version must be dynamic"
    assert 'version = { attr = "tracker.core.version.__version__" }' in text
    assert not re.search(r'^version = "', text, flags=re.M), "pyproject.toml names a version of its own"


def test_tracker_version_prints_it() -> None:
    env = child_environ()
    env["PYTHONPATH"] = str(REPO)
    out = subprocess.run([sys.executable, "-m", "tracker", "--version"], capture_output=True, text=True,
                         env=env, check=True).stdout
    assert out.strip() == f"tracker, version {__version__}"


def test_the_installed_metadata_agrees_when_installed_from_this_tree() -> None:
    # An editable install leaves tracker_core.egg-info in the tree, and the working folder comes first on sys.path:
    # the installed metadata is the one pip wrote, with its direct_url.json.
    found = list(metadata.distributions(name="tracker-core"))
    if not found:
        pytest.skip("tracker-core is not installed (the source tree runs from PYTHONPATH)")
    dist = next((d for d in found if d.read_text("direct_url.json")), found[0])
    direct = dist.read_text("direct_url.json")
    source = json.loads(direct).get("url", "") if direct else ""
    if source.removeprefix("file://").rstrip("/") != str(REPO):
        pytest.skip(f"the installed tracker-core comes from {source or 'an index'}, not this tree")
    assert dist.version == __version__, (
        f"the installed metadata says {dist.version}, tracker/core/version.py {__version__}: the metadata was built "
        "before the version changed; install again (pip install -e .)")
