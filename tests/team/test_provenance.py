"""Console and environment over the team store: synced like any record, their blobs in the bucket, kept by gc,
checked by verify; `tracker logs`, `env` and `diff` answer the same over PostgreSQL as over the folder."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

import tracker
from tracker.capture.environment import environment_blobs
from tracker.team.postgres import sync
from tracker.ui import create_app

from ..query.support import run_tracker
from .conftest import Bucket

ROOT = Path(__file__).resolve().parents[2]

TRAIN = textwrap.dedent("""
    import sys, tracker
    with tracker.start_run(project="lab", run_id=sys.argv[1], config={"lr": float(sys.argv[2])}) as run:
        print("epoch 0 loss 1.0")
        print("a warning", file=sys.stderr)
        run.log({"loss": 1.0})
""")


def make_runs(tmp: Path) -> Path:
    """Two runs made in a git repository with an uncommitted change: console, environment, two blobs."""
    if shutil.which("git") is None:
        pytest.skip("needs git")
    repo = tmp / "repo"
    repo.mkdir()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("TRACKER_")},
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e",
           "PYTHONPATH": str(ROOT)}
    for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "first"]):
        if args[0] == "add":
            (repo / "train.py").write_text(TRAIN)
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env, capture_output=True)
    (repo / "train.py").write_text(TRAIN + "# changed\n")
    store = tmp / "store"
    env["TRACKER_STORE"] = str(store)
    for rid, lr in (("first", "0.1"), ("second", "0.2")):
        subprocess.run([sys.executable, "train.py", rid, lr], cwd=repo, env=env, check=True, capture_output=True)
    return store


@pytest.mark.parametrize("bucket", ["s3"], indirect=True)
def test_sync_copies_console_and_environment_and_uploads_their_blobs(tmp_path: Path, pg_url: str,
                                                                    bucket: Bucket) -> None:
    store = make_runs(tmp_path)
    folder = tracker.open_store(store)
    shas = {sha for sha, _ in environment_blobs(folder.run("first"))}
    assert len(shas) == 2  # the package list and the diff
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = sync(folder, pg_url, blobs=bucket.url)
    assert rep.blobs.failed == 0 and rep.blobs.uploaded == 2  # the second run's are the same: not sent again
    assert {k for k in bucket.keys() if k.startswith("team/")} == {bucket.key(s) for s in shas}
    env = {"TRACKER_TEAM_BLOBS": bucket.url, "TRACKER_BLOB_CACHE": str(tmp_path / "cache")}
    outputs = {}
    for args in (["logs", "first", "--format", "json"], ["env", "second", "--diff"], ["diff", "first", "second"]):
        local = run_tracker("--store", str(store), *args, env=env)
        team = run_tracker("--store", pg_url, *args, env=env)
        assert local.returncode == 0 and team.returncode == 0, (local.stderr, team.stderr)
        assert team.stdout == local.stdout, args
        outputs[args[0]] = team.stdout
    assert '"text": "epoch 0 loss 1.0"' in outputs["logs"] and '"stream": "stderr"' in outputs["logs"]
    assert "+# changed" in outputs["env"]  # the diff, read from the bucket
    assert "config: 1 changed" in outputs["diff"] and "packages: same" in outputs["diff"]
    # the dashboard over the database answers as over the folder: console, environment, why they differ
    from starlette.testclient import TestClient

    os.environ.update(env)
    try:
        answers = []
        for where in (store, pg_url):
            with TestClient(create_app(str(where)), base_url="http://127.0.0.1") as c:
                console = c.get("/api/runs/first/console").json()
                again = c.get("/api/runs/first/console", params={"since": console["cursor"]}).json()
                environment = c.get("/api/runs/second/environment", params={"diff": 1}).json()["environment"]
                why = c.get("/api/diff", params={"runs": "first,second"}).json()
                answers.append((console["lines"], again["lines"], environment["diff"], environment["package_list"],
                                why["sections"]))
        assert answers[0] == answers[1] and answers[0][0] and answers[0][1] == []
    finally:
        del os.environ["TRACKER_TEAM_BLOBS"], os.environ["TRACKER_BLOB_CACHE"]


def test_gc_keeps_the_environment_blobs_and_verify_checks_them(tmp_path: Path) -> None:
    store = make_runs(tmp_path)
    opened = tracker.open_store(store)
    shas = {sha for sha, _ in environment_blobs(opened.run("first"))}
    from tracker.lifecycle.space import collect_garbage

    report = collect_garbage(opened, min_age=0)
    assert report.blobs == 0
    assert all(opened.blobs.exists(s) for s in shas)
    packages = next(sha for sha, what in environment_blobs(opened.run("first")) if "package list" in what)
    path = opened.blobs.path(packages)
    os.chmod(path, 0o644)
    path.write_bytes(path.read_bytes() + b"tampered==1.0\n")
    res = run_tracker("--store", str(store), "verify")
    assert res.returncode == 1 and "environment package list" in res.stdout + res.stderr
    # once no run names them, gc takes them
    for rid in ("first", "second"):
        run_tracker("--store", str(store), "rm", rid, "--yes")
    collect_garbage(tracker.open_store(store), min_age=0)
    assert not any(tracker.open_store(store).blobs.exists(s) for s in shas)
