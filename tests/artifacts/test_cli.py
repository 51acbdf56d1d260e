"""``tracker artifact list|show|alias|get`` and ``tracker lineage`` on a dataset -> model -> evaluation chain."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

import tracker
from tracker.capture.blobs import blob_path
from tracker.cli import make_cli

from .conftest import cli


def run_cli(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(make_cli(), list(args), catch_exceptions=False)
    return res.exit_code, res.stdout, res.stderr


def test_list_and_show(chain) -> None:
    store, ids = chain
    code, out, _ = run_cli("artifact", "list", "--format", "json")
    assert code == 0
    doc = json.loads(out)["artifacts"]
    assert [(a["name"], a["type"], a["versions"], a["latest"], a["aliases"]) for a in doc] == [
        ("mnist", "dataset", 1, "v0", {"latest": "v0", "raw": "v0"}),
        ("mnist-cnn", "model", 2, "v1", {"best": "v1", "latest": "v1", "prod": "v1"}),
        ("mnist-eval", "evaluation", 1, "v0", {"latest": "v0"})]
    code, out, _ = run_cli("artifact", "list", "--type", "model")
    assert code == 0 and "mnist/mnist-cnn" in out and "best:v1 latest:v1 prod:v1" in out and "mnist-eval" not in out
    code, out, _ = run_cli("artifact", "show", "mnist-cnn", "--format", "json")
    doc = json.loads(out)
    assert [(v["version"], v["aliases"], v["producer"], v["consumers"]) for v in doc["versions"]] == [
        ("v0", [], ids["train-1"], []), ("v1", ["latest", "best", "prod"], ids["train-2"], [ids["eval"]])]
    assert [(h["alias"], h["op"], h["version"], h["how"]) for h in doc["history"]] == [
        ("best", "set", "v1", "log"), ("prod", "set", "v1", "edit")]
    code, out, _ = run_cli("artifact", "show", "mnist:raw", "--format", "json")
    doc = json.loads(out)
    assert [f["path"] for f in doc["files"]] == ["sub/test.csv", "train.csv"]
    assert doc["versions"][0]["consumers"] == [ids["train-1"], ids["train-2"]]
    code, out, _ = run_cli("artifact", "show", "mnist-cnn")
    assert code == 0 and "train-2" in out and "alias history:" in out


def test_alias_and_get(chain, tmp_path: Path) -> None:
    store, ids = chain
    code, out, err = run_cli("artifact", "alias", "mnist-cnn:v0", "prod")
    assert (code, out) == (0, "mnist/mnist-cnn:v0 is now 'prod' (moved from v1)\n"), err
    assert tracker.open_store().artifact("mnist-cnn:prod").version == "v0"
    code, out, _ = run_cli("artifact", "alias", "mnist-cnn", "prod", "--remove")
    assert (code, out) == (0, "removed alias 'prod' from mnist/mnist-cnn (it named v0)\n")
    for bad, says in (("latest", "set automatically"), ("v3", "looks like a version"), ("a/b", "expected 1 to 64")):
        code, out, err = run_cli("artifact", "alias", "mnist-cnn:v1", bad)
        assert code == 1 and out == "" and says in err and err.count("\n") == 1
    code, out, err = run_cli("artifact", "alias", "mnist-cnn", "prod")
    assert code == 1 and "say which version" in err
    os.chdir(tmp_path)
    code, out, err = run_cli("artifact", "get", "mnist-cnn:best")
    assert code == 0 and Path(out.strip()) == tmp_path / "model-2.pt"
    assert (tmp_path / "model-2.pt").read_bytes() == b"weightsweights"
    code, out, err = run_cli("artifact", "get", "mnist-cnn:best")
    assert code == 1 and "exists" in err
    code, out, err = run_cli("artifact", "get", "mnist", "-o", str(tmp_path / "ds"))
    assert code == 0 and (tmp_path / "ds" / "sub" / "test.csv").read_text() == "x,y\n3,4\n"
    code, out, err = run_cli("artifact", "get", "mnist-cnn:nope")
    assert code == 1 and "no version or alias 'nope'" in err and "aliases: best, latest" in err
    # A damaged blob: one line naming artifact, version and blob; nothing at PATH.
    sha = tracker.open_store().artifact("mnist-cnn:v0").sha256
    blob = blob_path(store, sha)
    os.chmod(blob, 0o644)
    blob.write_bytes(b"W" * blob.stat().st_size)
    code, out, err = run_cli("artifact", "get", "mnist-cnn:v0", "-o", str(tmp_path / "bad.pt"))
    assert code == 1 and "mnist/mnist-cnn:v0" in err and sha in err and err.count("\n") == 1
    assert not (tmp_path / "bad.pt").exists() and not list(tmp_path.glob(".bad.pt*"))


def test_lineage_in_three_formats(chain) -> None:
    store, ids = chain
    code, out, _ = run_cli("lineage", ids["train-2"])
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith(f"run {ids['train-2'][:8]} train-2 (finished)")
    text = "\n".join(lines)
    assert "used mnist:v0 (dataset)  latest, raw" in text
    assert f"made by run {ids['prep'][:8]} prep" in text
    assert "made mnist-cnn:v1 (model)  latest, best, prod" in text
    assert f"used by run {ids['eval'][:8]} eval" in text and "made mnist-eval:v0 (evaluation)" in text
    # --depth 1: the run's own inputs and outputs and the runs at their other ends, no further.
    code, out, _ = run_cli("lineage", ids["train-2"], "--depth", "1")
    assert "mnist-eval" not in out and "eval" in out
    code, out, _ = run_cli("lineage", "mnist-cnn:prod", "--format", "json")
    doc = json.loads(out)
    assert doc["root"] == "artifact:mnist/mnist-cnn:v1" and doc["depth"] == 3
    edges = {(e["from"], e["to"], e["kind"]) for e in doc["edges"]}
    assert edges == {
        (f"run:{ids['train-2']}", "artifact:mnist/mnist-cnn:v1", "produced"),
        ("artifact:mnist/mnist:v0", f"run:{ids['train-2']}", "used"),
        (f"run:{ids['prep']}", "artifact:mnist/mnist:v0", "produced"),
        ("artifact:mnist/mnist-cnn:v1", f"run:{ids['eval']}", "used"),
        (f"run:{ids['eval']}", "artifact:mnist/mnist-eval:v0", "produced")}
    kinds = {n["id"]: n["kind"] for n in doc["nodes"]}
    assert kinds[f"run:{ids['prep']}"] == "run" and kinds["artifact:mnist/mnist:v0"] == "artifact"
    code, out, _ = run_cli("lineage", ids["eval"], "--format", "dot")
    assert out.startswith("digraph lineage {") and out.rstrip().endswith("}")
    assert f'"artifact:mnist/mnist-cnn:v1" -> "run:{ids["eval"]}" [label="used"];' in out
    assert f'"run:{ids["prep"]}" -> "artifact:mnist/mnist:v0" [label="produced"];' in out
    code, out, err = run_cli("lineage", "nothing-here")
    assert code == 1 and "neither a run nor an artifact" in err
    code, out, err = run_cli("lineage", ids["eval"], "--depth", "0")
    assert code == 2  # click's usage error


@pytest.mark.parametrize("args", [("artifact", "list"), ("lineage", "eval", "--format", "json")])
def test_console_script(chain, args) -> None:
    store, _ = chain
    res = cli(store, *args)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    assert res.stdout.strip()


def test_the_old_commands_stay(chain, tmp_path: Path) -> None:
    store, ids = chain
    code, out, _ = run_cli("artifacts", ids["train-2"], "--format", "json")
    assert code == 0 and [a["name"] for a in json.loads(out)["artifacts"]] == ["mnist-cnn"]
    code, out, err = run_cli("get", ids["eval"], "mnist-eval", "-o", str(tmp_path / "r.txt"))
    assert code == 0 and (tmp_path / "r.txt").read_text() == "acc 0.93\n"


def test_the_dashboard_api(chain) -> None:
    from starlette.testclient import TestClient

    import tracker.ui

    store, ids = chain
    c = TestClient(tracker.ui.create_app(store), base_url="http://127.0.0.1")
    doc = c.get("/api/artifacts").json()
    assert [a["qualified"] for a in doc["artifacts"]] == ["mnist/mnist", "mnist/mnist-cnn", "mnist/mnist-eval"]
    assert doc["types"] == ["dataset", "evaluation", "model"]
    one = c.get("/api/artifact", params={"ref": "mnist-cnn:prod"}).json()
    v = one["version"]
    assert (v["version"], v["asked"], v["producer"]["name"], [r["name"] for r in v["consumers"]]) == \
        ("v1", "prod", "train-2", ["eval"])
    assert v["files"][0]["download"] == f"/api/runs/{ids['train-2']}/blobs/{v['sha256']}?download=1"
    got = c.get(v["files"][0]["download"])
    assert got.status_code == 200 and got.content == b"weightsweights"
    assert c.get("/api/artifact", params={"ref": "nope:v0"}).status_code == 404
    assert c.get("/api/artifact").status_code == 400
    assert c.get("/api/lineage", params={"ref": ids["eval"], "depth": "x"}).status_code == 400
    assert c.get("/api/lineage", params={"ref": "not-a-thing"}).status_code == 404
    runs = c.get(f"/api/runs/{ids['eval']}", params={"parts": "artifacts"}).json()["artifacts"]
    assert [(a["name"], a["version"], a["qualified"]) for a in runs] == [("mnist-eval", "v0", "mnist/mnist-eval")]
