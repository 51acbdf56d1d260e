"""tracker.show and the notebook reprs of Run and RunView (no browser: the served page is in test_truth.py)."""

from __future__ import annotations

import subprocess
import sys
import urllib.request

import pytest

import tracker
from tracker.core.errors import TrackerError

from .support import XSS


def test_show_frames_the_runs_page_a_run_and_a_comparison(runs_store):
    store, ids = runs_store
    board = tracker.show(store)
    assert board._repr_html_().startswith('<iframe src="http://127.0.0.1:') and 'height="600"' in board._repr_html_()
    with urllib.request.urlopen(board.url) as r:
        csp = r.headers["Content-Security-Policy"]
        assert "frame-ancestors 'self' http://localhost:*" in csp and "script-src 'self'" in csp
        assert r.headers.get("X-Frame-Options") is None
    view = tracker.open_store(store).run(ids["alpha"])
    assert tracker.show(view).url == board.url.rstrip("/") + f"/runs/{ids['alpha']}"
    both = [view, tracker.open_store(store).run(ids["beta"])]
    assert tracker.show(both).url.endswith(f"/compare?runs={ids['alpha']},{ids['beta']}")


@pytest.mark.parametrize("bad", [42, [], {"a": 1}])
def test_show_names_what_it_expected(bad):
    with pytest.raises(TrackerError, match="expected a store path, a Store, a run or a list of runs"):
        tracker.show(bad)


def test_show_refuses_a_silly_height(runs_store):
    with pytest.raises(TrackerError, match="height"):
        tracker.show(runs_store[0], height=5)


def test_importing_tracker_does_not_import_the_dashboard():
    code = "import sys, tracker; print('starlette' in sys.modules, 'uvicorn' in sys.modules, 'show' in tracker.__all__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", "True"]


def test_run_and_runview_reprs_escape_user_strings(tmp_path):
    with tracker.start_run(store=tmp_path / "s", name=XSS, project="p<1>", config={XSS: {"k": XSS}}) as run:
        run.log({"loss": 0.5, "ok": True})
        live = run._repr_html_()
    stored = tracker.open_store(tmp_path / "s").run(run.id)._repr_html_()
    for text in (live, stored):
        assert "<img" not in text and "&lt;img src=x onerror=alert(1)&gt;" in text
        assert "p&lt;1&gt;" in text and "loss" in text and "0.5" in text
    assert "running" in live and "finished" in stored
