"""tracker.testing's fixtures, run as a plugin author runs them: in a pytest of its own."""

from __future__ import annotations

import textwrap

import pytest

pytest_plugins = ["pytester"]

INNER = '''
import os
from pathlib import Path

import tracker


def test_isolated(tracker_store):
    assert "TRACKER_CONFIG" not in os.environ and "TRACKER_RUN_ID" not in os.environ
    assert os.environ["TRACKER_STORE"] == str(tracker_store)
    assert Path.cwd() == tracker_store.parent / "work" and not any(Path.cwd().iterdir())
    with tracker.start_run(project="p") as run:
        run.log({"loss": 1.0})
    assert run.id != "shared-run"
    assert [info.id for info in tracker.open_store().runs()] == [run.id]
    assert "fft_study" in [p.name for p in tracker.list_plugins()]
'''


def test_tracker_store_ignores_the_shells_config_run_id_and_folder(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    # What a developer's shell may hold: a broken config, a shared run id, and
    # a tracker.toml in the folder pytest starts from that disables a plugin.
    bad = pytester.path / "bad.toml"
    bad.write_text("[store]\nno_such_key = 1\n")
    monkeypatch.setenv("TRACKER_CONFIG", str(bad))
    monkeypatch.setenv("TRACKER_RUN_ID", "shared-run")
    pytester.makefile(".toml", tracker=textwrap.dedent("""\
        [store]
        path = "elsewhere"
        [plugins]
        disable = ["fft_study"]
        """))
    pytester.makeconftest('pytest_plugins = ["tracker.testing"]\n')
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert not (pytester.path / "elsewhere").exists()
