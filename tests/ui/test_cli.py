"""``tracker ui`` as a user runs it: a real process, its URL, Ctrl-C, the warning, the missing extra."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from .support import strict_json


def start(store, *args):
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    return subprocess.Popen([sys.executable, "-m", "tracker", "--store", str(store), "ui", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def read_url(proc) -> str:
    deadline = time.time() + 30
    while time.time() < deadline:
        line = proc.stdout.readline()
        if "http://" in line:
            return line.split("at ", 1)[1].split()[0]
        if proc.poll() is not None:
            break
    raise AssertionError(f"no URL printed; stderr: {proc.stderr.read()}")


def test_serves_the_store_prints_its_url_and_stops_on_ctrl_c(runs_store):
    store, ids = runs_store
    proc = start(store, "--no-open")
    try:
        url = read_url(proc)
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url + "api/runs") as r:
            assert {row["id"] for row in strict_json(r.read().decode())["runs"]} == set(ids.values())
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err
        assert "stopped" in out and "Traceback" not in err
    finally:
        proc.kill()


def test_a_non_loopback_host_needs_auth_and_warns(tmp_path):
    proc = start(tmp_path / "store", "--host", "0.0.0.0", "--no-open")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "--auth token" in err  # tests/ui/test_auth.py tests the rest
    proc = start(tmp_path / "store", "--host", "0.0.0.0", "--no-open", "--auth", "token")
    try:
        read_url(proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
        assert "anyone who can reach this machine may try to log in" in err and "0.0.0.0" in err
    finally:
        proc.kill()


def test_without_the_extra_one_line_says_how_to_install(tmp_path):
    code = ("import sys; sys.modules['starlette'] = None; sys.modules['uvicorn'] = None\n"
            "from tracker.cli import main\n"
            f"main(['--store', {str(tmp_path)!r}, 'ui', '--no-open'])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == ['tracker: tracker ui needs the dashboard extra: '
                                                'pip install "tracker-core[ui]"']


@pytest.mark.parametrize(("host", "loopback"), [("127.0.0.1", True), ("localhost", True), ("::1", True),
                                                ("0.0.0.0", False), ("192.168.1.2", False), ("example.org", False)])
def test_is_loopback(host, loopback):
    from tracker.cli.ui import is_loopback

    assert is_loopback(host) is loopback
