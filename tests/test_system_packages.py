"""Tests that need a system package skip without it, say which, and CI can turn that into a failure."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .sysdeps import packages_of, reason

ROOT = Path(__file__).resolve().parent.parent
BROWSER_TEST = "tests/lifecycle/test_dashboard.py::test_the_run_page_shows_notes_tags_and_summary_values"
PG_TEST = "tests/query/test_team.py::test_errors_are_one_line_and_mask_the_password"


def _pytest(*tests: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items()
             if k not in ("TRACKER_TESTS_WITHOUT", "TRACKER_REQUIRE_SYSTEM_PACKAGES")}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, env={**clean, **env})


def test_a_reason_names_its_packages_and_reads_back() -> None:
    text = reason(("chromium", "chromium-driver"), "a browser")
    assert "sudo apt-get install chromium chromium-driver" in text
    assert packages_of(f"Skipped: {text}") == ("chromium", "chromium-driver")
    assert packages_of(reason(("postgresql",), "a server")) == ("postgresql",)
    assert packages_of("the team extra (psycopg) is not installed") is None


def test_missing_packages_skip_and_the_last_lines_say_which() -> None:
    proc = _pytest(BROWSER_TEST, PG_TEST, TRACKER_TESTS_WITHOUT="chromium,chromium-driver,postgresql")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    last = proc.stdout.strip().splitlines()[-2:]
    assert last[0] == ("skipped for missing system packages: 1 test needs chromium and chromium-driver; "
                       "1 test needs postgresql (install with `sudo apt-get install chromium chromium-driver "
                       "postgresql`)")
    assert "2 skipped" in last[1]


def test_ci_turns_a_skip_for_a_missing_package_into_a_failure() -> None:
    proc = _pytest(BROWSER_TEST, TRACKER_TESTS_WITHOUT="chromium-driver", TRACKER_REQUIRE_SYSTEM_PACKAGES="1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "missing system package chromium-driver" in proc.stdout and "1 failed" in proc.stdout


def test_ci_sets_the_requirement() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    assert "export TRACKER_REQUIRE_SYSTEM_PACKAGES=1" in script
    for package in ("chromium", "chromium-driver", "postgresql"):
        assert f"need+=({package})" in script
