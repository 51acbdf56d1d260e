"""Text the tracker records on its own, and failures it records (issue 10, items 2, 3 and 11).

- Item 2: a real script started with a non-UTF-8 argument, or from a folder
  whose name is not UTF-8 (a child process started with those bytes), that
  raises an exception whose message holds a file name from ``os.listdir``.
  The run must start, the user's exception must come out unchanged, and the
  run must read as ``failed`` with what could not be encoded escaped.
- Item 3: an exception whose ``__str__`` raises (or returns no str): recording
  the failure never fails.
- Item 11: non-finite floats in a run's config read back as floats.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracker
from tests.reliability.support import child_env, cli, read_run, same, strict_json_lines
from tracker.core.format import encode_line, nonfinite_paths, parse_line, restore_nonfinite
from tracker.core.format import event as fmt_event

SCRIPT = r'''
import json, os, sys
import tracker

class DataFileError(Exception):
    pass

store = os.environ["STORE"]
names = sorted(n for n in os.listdir(".") if n.startswith("caf"))
error = DataFileError(f"cannot parse {names[0]}")
out = {"argv_tail": [os.fsencode(a).hex() for a in sys.argv[1:]], "cwd": os.fsencode(os.getcwd()).hex()}
try:
    with tracker.start_run(project="enc", name="enc", store=store, run_id="enc") as run:
        run.log({"k": 1.0}, step=0)
        out["started"] = True
        raise error
except BaseException as exc:
    out["same"] = exc is error
    out["type"] = f"{type(exc).__module__}.{type(exc).__name__}"
    out["context"] = repr(exc.__context__)
print(json.dumps(out))
'''


def run_script(tmp_path: Path, folder: bytes, argv: list[bytes]) -> dict:
    """Run SCRIPT in a child started with ``argv`` from the folder ``folder`` (bytes: any name)."""
    cwd = os.path.join(os.fsencode(tmp_path), folder)
    os.mkdir(cwd)
    # A file whose name is not UTF-8, as a data folder may hold: the exception message names it.
    open(os.path.join(cwd, b"caf\xe9.csv"), "wb").close()
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    env = child_env(tmp_path, STORE=str(tmp_path / "store"), LC_ALL="C.UTF-8", TRACKER_ENVIRONMENT="on")
    res = subprocess.run([sys.executable, os.fsencode(script), *argv], cwd=cwd, env=env, capture_output=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr.decode(errors="replace")
    return json.loads(res.stdout)


@pytest.mark.parametrize(("folder", "argv"), [
    (b"plain", [b"--data", b"caf\xe9.csv"]),
    (b"d\xe9p\xf4t", [b"--epochs", b"3"]),
], ids=["argv", "cwd"])
def test_non_utf8_argv_cwd_and_message_start_the_run_keep_the_users_exception_and_mark_it_failed(
        tmp_path: Path, host: tracker.Host, folder: bytes, argv: list[bytes]) -> None:
    out = run_script(tmp_path, folder, argv)
    # The fault was real: the child saw those bytes.
    assert [bytes.fromhex(a) for a in out["argv_tail"]] == argv
    assert bytes.fromhex(out["cwd"]).endswith(folder)
    # The run started, and the user's own exception came out, unchanged and alone.
    assert out.get("started") is True, out
    assert out["same"] is True and out["type"] == "__main__.DataFileError", out
    assert out["context"] == "None", out
    store = tmp_path / "store"
    view, records = read_run(store, "enc")
    assert [r.data for r in records if r.schema != "environment"] == [{"k": 1.0}]
    info = view.info
    assert info.status == "failed"
    assert info.error["type"] == "DataFileError"
    # What could not be encoded is escaped, byte by byte, and the rest kept.
    assert info.error["message"] == "cannot parse caf\\xe9.csv"
    assert "DataFileError: cannot parse caf\\xe9.csv" in info.error["traceback"]
    argv_text = [a.decode("utf-8", "backslashreplace") for a in argv]
    assert info.env["argv"][1:] == argv_text
    assert info.env["cwd"].endswith(folder.decode("utf-8", "backslashreplace"))
    assert strict_json_lines(view.segment_paths()) == 4  # start, environment, metrics, end
    res = cli("--store", str(store), "show", "enc", "--format", "json", env=child_env(tmp_path), cwd=tmp_path)
    assert res.returncode == 0, res.stderr


@pytest.fixture(autouse=True)
def no_run_left_open() -> Iterator[None]:
    """Finish what a failing test left open, so that it cannot disturb the tests after it."""
    yield
    while (run := tracker.current_run()) is not None:
        run.finish("failed")


class StrRaises(Exception):
    def __str__(self) -> str:
        raise RuntimeError("__str__ of the user's exception failed")


class StrNotText(Exception):
    def __str__(self) -> str:
        return 42  # type: ignore[return-value]


class ReprRaisesToo(Exception):
    def __str__(self) -> str:
        raise ValueError("no str")

    def __repr__(self) -> str:
        raise ValueError("no repr")


class SurrogateMessage(Exception):
    def __str__(self) -> str:
        return "lone \ud800 surrogate"


@pytest.mark.parametrize("cls", [StrRaises, StrNotText, ReprRaisesToo, SurrogateMessage])
def test_an_exception_whose_str_fails_propagates_and_the_run_is_failed(tmp_path: Path, host: tracker.Host,
                                                                      cls: type[Exception]) -> None:
    store = tmp_path / "store"
    error = cls()
    with pytest.raises(cls) as caught:
        with tracker.start_run(store=store, run_id="weird") as run:
            run.log({"k": 1.0}, step=0)
            raise error
    assert caught.value is error
    assert error.__context__ is None  # nothing raised while recording it
    view, records = read_run(store, "weird")
    assert [r.data for r in records] == [{"k": 1.0}]
    info = view.info
    assert info.status == "failed", info
    assert info.error["type"] == cls.__name__
    assert isinstance(info.error["message"], str) and isinstance(info.error["traceback"], str)
    assert f"{cls.__name__}" in info.error["traceback"]
    if cls is SurrogateMessage:
        assert info.error["message"] == "lone \\ud800 surrogate"
    assert view.problems == []


def test_finish_with_an_exception_whose_str_fails(tmp_path: Path, host: tracker.Host) -> None:
    store = tmp_path / "store"
    run = tracker.start_run(store=store, run_id="weird")
    try:
        run.finish("failed", error=StrRaises())
    finally:
        run.finish("failed")  # a no-op once the run has finished
    assert tracker.open_store(store).run("weird").info.status == "failed"


def test_non_finite_config_values_read_back_as_floats(tmp_path: Path, host: tracker.Host) -> None:
    store = tmp_path / "store"
    config = {"clip": math.inf, "floor": -math.inf, "lr": 0.1, "mask": math.nan,
              "nested": {"limits": [1.0, math.inf, -math.inf], "name": "adam"}}
    with tracker.start_run(store=store, run_id="cfg", config=config):
        pass
    info = tracker.open_store(store).run("cfg").info
    assert same(info.config, config), info.config
    # The line is still strict JSON, with the store's encoding of non-finite numbers.
    assert strict_json_lines(tracker.open_store(store).run("cfg").segment_paths()) == 2
    res = cli("--store", str(store), "show", "cfg", "--format", "json", env=child_env(tmp_path), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["info"]["config"]["clip"] == "Infinity"  # --format json: the store's encoding, as for metrics


def test_config_strings_like_nan_stay_strings_beside_non_finite_floats(tmp_path: Path, host: tracker.Host) -> None:
    store = tmp_path / "store"
    config = {"fill": "NaN", "clip": math.inf, "both": ["Infinity", -math.inf, {"-Infinity": "-Infinity"}]}
    with tracker.start_run(store=store, run_id="cfg", config=config, name="NaN"):
        pass
    info = tracker.open_store(store).run("cfg").info
    assert same(info.config, config), info.config
    assert info.name == "NaN"


HOST_SCRIPT = r'''
import json, socket, sys
socket.sethostname(b"gpu\xe9-01")  # in a UTS namespace of its own: the machine's name is untouched
import tracker
with tracker.start_run(project="host", store=sys.argv[1], run_id="host") as run:
    run.log({"k": 1.0})
    seen = tracker.open_store(sys.argv[1]).run("host").info.status  # this host's writer, alive
print(json.dumps({"host": socket.gethostname().encode("utf-8", "surrogateescape").hex(), "seen": seen}))
'''


def test_a_host_name_that_is_not_utf8_is_stored_escaped(tmp_path: Path, host: tracker.Host) -> None:
    unshare = shutil.which("unshare")
    probe = subprocess.run([unshare or "unshare", "--uts", "true"], capture_output=True) if unshare else None
    if probe is None or probe.returncode != 0:
        pytest.skip("needs unshare --uts (a UTS namespace) to give a process another host name")
    store = tmp_path / "store"
    res = subprocess.run([unshare, "--uts", sys.executable, "-c", HOST_SCRIPT, str(store)], capture_output=True,
                         text=True, env=child_env(tmp_path), cwd=tmp_path, timeout=60)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout)
    assert bytes.fromhex(out["host"]) == b"gpu\xe9-01" and out["seen"] == "running"
    view, records = read_run(store, "host")
    assert [r.data for r in records] == [{"k": 1.0}]
    assert view.info.status == "finished" and view.info.env["host"] == "gpu\\xe9-01"
    assert strict_json_lines(view.segment_paths()) == 3


_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.floats(),
                     st.sampled_from(["NaN", "Infinity", "-Infinity", "nan", "inf", ""]), st.text(max_size=5))
_configs = st.dictionaries(st.text(max_size=4), st.recursive(
    _scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=20), max_size=6)


@settings(max_examples=200, deadline=None)
@given(_configs)
def test_config_round_trips_through_the_line_format(config: dict) -> None:
    paths = nonfinite_paths(config)
    line = encode_line(fmt_event("run_started", None, None, 1.0, "w", 1,
                                 {"config": config, **({"config_nonfinite": paths} if paths else {})}))
    data = parse_line(line[:-1])["data"]
    assert same(restore_nonfinite(data["config"], data.get("config_nonfinite")), config)
