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
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import tracker
from tests.reliability.support import child_env, cli, read_run, same, strict_json_lines

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
    env = child_env(tmp_path, STORE=str(tmp_path / "store"), LC_ALL="C.UTF-8")
    res = subprocess.run([sys.executable, os.fsencode(script), *argv], cwd=cwd, env=env, capture_output=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr.decode(errors="replace")
    return json.loads(res.stdout)


@pytest.mark.xfail(strict=True, reason="issue 10 item 2: argv, cwd and messages must be storable")
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
    assert [r.data for r in records] == [{"k": 1.0}]
    info = view.info
    assert info.status == "failed"
    assert info.error["type"] == "DataFileError"
    # What could not be encoded is escaped, byte by byte, and the rest kept.
    assert info.error["message"] == "cannot parse caf\\xe9.csv"
    assert "DataFileError: cannot parse caf\\xe9.csv" in info.error["traceback"]
    argv_text = [a.decode("utf-8", "backslashreplace") for a in argv]
    assert info.env["argv"][1:] == argv_text
    assert info.env["cwd"].endswith(folder.decode("utf-8", "backslashreplace"))
    assert strict_json_lines(view.segment_paths()) == 3
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


@pytest.mark.xfail(strict=True, reason="issue 10 item 3: recording a failure must never fail")
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


@pytest.mark.xfail(strict=True, reason="issue 10 item 3: recording a failure must never fail")
def test_finish_with_an_exception_whose_str_fails(tmp_path: Path, host: tracker.Host) -> None:
    store = tmp_path / "store"
    run = tracker.start_run(store=store, run_id="weird")
    try:
        run.finish("failed", error=StrRaises())
    finally:
        run.finish("failed")  # a no-op once the run has finished
    assert tracker.open_store(store).run("weird").info.status == "failed"


@pytest.mark.xfail(strict=True, reason="issue 10 item 11: config floats read back as strings")
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


@pytest.mark.xfail(strict=True, reason="issue 10 item 11: config strings that read back as floats")
def test_config_strings_that_would_read_back_as_numbers_are_refused(tmp_path: Path, host: tracker.Host) -> None:
    store = tmp_path / "store"
    try:
        run = tracker.start_run(store=store, run_id="cfg", config={"fill": "NaN"})
    except tracker.SchemaError as exc:
        assert "config" in str(exc) and "fill" in str(exc)
    else:
        run.finish()
        pytest.fail("a config string 'NaN' was accepted: it would read back as a float")
    assert not (store / "runs" / "cfg").exists()
