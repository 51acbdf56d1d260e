"""Errors are one line on stderr and a non-zero exit, never a traceback; global options; colour."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import tracker
from tests.cli.support import run_on_terminal, run_tracker, write_run


@pytest.fixture
def one_run(store) -> str:
    with tracker.start_run(name="only") as run:
        run.log({"loss": 0.5})
    return run.id


def _one_error_line(result, *needles: str) -> str:
    assert result.exit_code != 0
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("tracker: ") and "Traceback" not in result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("args", [
    ["show", "nosuchrun"], ["summary", "nosuchrun"], ["tail", "nosuchrun"], ["export", "nosuchrun"],
    ["verify", "nosuchrun"], ["compare", "nosuchrun", "only"],
])
def test_unknown_run(cli, one_run, args):
    result = cli(*args)
    assert result.exit_code == 1 and result.stdout == ""
    _one_error_line(result, "no run matches 'nosuchrun'")


def test_ambiguous_prefix_lists_the_candidates(cli, store):
    write_run(store, "ab1111111111", [(0, {"x": 1.0})])
    write_run(store, "ab2222222222", [(0, {"x": 1.0})])
    _one_error_line(cli("show", "ab"), "ambiguous", "ab1111111111", "ab2222222222")


@pytest.mark.parametrize("args", [
    ["summary", "only", "--schema", "no.such"], ["tail", "only", "--schema", "no.such"],
    ["export", "only", "--schema", "no.such"], ["schemas", "no.such"],
])
def test_unknown_schema(cli, one_run, args):
    _one_error_line(cli(*args), "unknown schema 'no.such'", "fft.loss_point")


def test_bad_store(cli, tmp_path):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    _one_error_line(cli("--store", str(not_a_folder), "runs"), "not a store folder")
    _one_error_line(cli("--store", str(tmp_path / "missing"), "runs"), "no store at", "missing")


def test_bad_option_is_a_usage_error(cli, one_run):
    result = cli("runs", "--format", "xml")
    assert result.exit_code == 2 and "Invalid value for '--format'" in result.stderr


def test_bad_tracker_toml_found_upwards(tmp_path):
    (tmp_path / "tracker.toml").write_text("[store]\ndurability = \"sometimes\"\n")
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    env = {"TRACKER_STORE": "", "TRACKER_CONFIG": ""}
    for args in (["runs"], ["plugins"], ["fft", "report", "x"]):
        proc = run_tracker(*args, cwd=inner, env=env)
        assert proc.returncode == 1 and proc.stdout == "", args
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert "tracker.toml" in proc.stderr and "durability" in proc.stderr and "'process'" in proc.stderr
    help_ = run_tracker("--help", cwd=inner, env=env)
    assert help_.returncode == 0 and "runs" in help_.stdout  # help still works, with a warning


def test_config_option_and_store_from_it(tmp_path, one_run, store):
    bad = tmp_path / "bad.toml"
    bad.write_text("[store]\nbogus = 1\n")
    proc = run_tracker("--config", str(bad), "runs")
    assert proc.returncode == 1 and "unknown key [store] bogus" in proc.stderr
    good = tmp_path / "conf" / "tracker.toml"
    good.parent.mkdir()
    good.write_text(f'[store]\npath = "{store}"\n')
    proc = run_tracker("--config", str(good), "runs", "--format", "csv", env={"TRACKER_STORE": ""})
    assert proc.returncode == 0, proc.stderr
    assert one_run in proc.stdout


def test_store_option_beats_the_environment(tmp_path, one_run, store):
    proc = run_tracker("--store", str(store), "runs", "--format", "csv",
                       env={"TRACKER_STORE": str(tmp_path / "elsewhere")})
    assert proc.returncode == 0 and one_run in proc.stdout
    env_only = run_tracker("runs", "--format", "csv", env={"TRACKER_STORE": str(store)})
    assert env_only.returncode == 0 and one_run in env_only.stdout


def test_version():
    proc = run_tracker("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"tracker, version {tracker.__version__}"


def test_closed_pipe_is_quiet(store):
    write_run(store, "long", [(s, {"x": float(s)}) for s in range(20_000)])
    proc = subprocess.Popen([sys.executable, "-m", "tracker", "--store", str(store), "export", "long"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.readline()
    proc.stdout.close()  # like `| head -1`
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_colour_only_on_a_terminal_and_never_with_no_color(one_run, store: Path):
    args = ["--store", str(store), "runs"]
    coloured = run_on_terminal(args, env={"TERM": "xterm"})
    assert "\x1b[" in coloured and "only" in coloured
    plain = run_on_terminal(args, env={"TERM": "xterm", "NO_COLOR": "1"})
    assert "\x1b[" not in plain and "only" in plain
    piped = run_tracker(*args, env={"TERM": "xterm"})
    assert "\x1b[" not in piped.stdout and "only" in piped.stdout


@pytest.mark.parametrize("args", [
    ["runs", "--format", "json"], ["show", "only", "--format", "json"], ["summary", "only", "--format", "json"],
    ["compare", "only", "second", "--format", "json"], ["plugins", "--format", "json"],
    ["schemas", "--format", "json"], ["verify", "--format", "json"],
])
def test_python_m_tracker_prints_one_json_document(one_run, store, args):
    import json

    if "second" in args:  # compare needs two different runs
        write_run(store, "second", [(0, {"loss": 0.3})], name="second")
    proc = run_tracker("--store", str(store), *args)
    assert proc.returncode == 0, proc.stderr
    json.loads(proc.stdout)  # exactly one document: anything else on stdout would fail here
