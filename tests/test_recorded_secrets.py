"""Passwords of URLs never reach a run's files: its recorded command line and its config are masked first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

import tracker
from tracker.core.urls import redact_urls

_name = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz0123456789_-"), min_size=1, max_size=12)
_password = st.text(st.characters(blacklist_characters="/?#", blacklist_categories=("Cs", "Z", "Cc")),
                    min_size=1, max_size=30)


def _run_files(store: Path) -> bytes:
    return b"".join(p.read_bytes() for p in (store / "runs").rglob("*") if p.is_file())


def test_command_line_and_config_are_masked_in_the_store(tmp_path: Path) -> None:
    store = tmp_path / "store"
    script = tmp_path / "train.py"
    script.write_text(textwrap.dedent("""
        import sys
        import tracker
        with tracker.start_run(project="p", config={"db": sys.argv[2], "name": "plain", "depth": 3,
                                                    "nested": {"urls": [sys.argv[2], "https://example.org/x"]}}) as run:
            run.config.update({"later": "see " + sys.argv[2] + " then"})
            run.log({"x": 1.0})
            print(run.id)
    """))
    url = "postgresql://lab:pa55@word@db.example:5432/runs?sslmode=require"
    out = subprocess.run([sys.executable, str(script), "--db", url, "--mirror=s3://k:zz9secret@host/b"],
                         capture_output=True, text=True, timeout=60,
                         env={**os.environ, "TRACKER_STORE": str(store), "TRACKER_ENVIRONMENT": "on"})
    assert out.returncode == 0, out.stderr
    run_id = out.stdout.strip()
    raw = _run_files(store)
    assert b"pa55" not in raw and b"word@db" not in raw and b"zz9secret" not in raw
    info = tracker.open_store(store).run(run_id).info
    masked = "postgresql://lab:***@db.example:5432/runs?sslmode=require"
    assert info.env["argv"][1:] == ["--db", masked, "--mirror=s3://k:***@host/b"]
    assert info.config == {"db": masked, "name": "plain", "depth": 3,
                           "nested": {"urls": [masked, "https://example.org/x"]},
                           "later": f"see {masked} then"}


def test_run_config_reads_back_what_was_stored(tmp_store: Path) -> None:
    with tracker.start_run(config={"db": "postgresql://u:secret@h/d"}) as run:
        run.config["mirror"] = "postgresql://u@h/d?password=other"
        assert dict(run.config) == {"db": "postgresql://u:***@h/d", "mirror": "postgresql://u@h/d?password=***"}
    assert tracker.open_store().run(run.id).info.config == dict(run.config)


@given(user=_name, password=_password, host=_name, db=_name,
       before=st.sampled_from(["", "--db=", "url: ", "x "]), after=st.sampled_from(["", " rest", "?a=1"]))
def test_redact_urls_hides_a_password_anywhere_in_text(user, password, host, db, before, after):
    text = f"{before}postgresql://{user}:{password}@{host}/{db}{after}"
    assert redact_urls(text) == f"{before}postgresql://{user}:***@{host}/{db}{after}"
    assert redact_urls({"k": [text, (text,)]}) == {"k": [redact_urls(text), (redact_urls(text),)]}


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                    | st.text(st.characters(blacklist_characters=":@=")),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner,
                                                                                max_size=4), max_leaves=12))
def test_redact_urls_leaves_what_holds_no_password_alone(value):
    assert redact_urls(value) == value
    json.dumps(redact_urls(value))
