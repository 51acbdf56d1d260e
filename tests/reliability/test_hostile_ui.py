"""Hostile requests against a real ``tracker ui`` process: DNS rebinding (foreign Host), a blob that is a FIFO."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

import tracker  # noqa: E402

from ..childenv import child_environ


def _serve(store: Path, *args: str) -> tuple[subprocess.Popen, int]:
    env = child_environ()
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("DISPLAY", None)
    env.pop("WAYLAND_DISPLAY", None)
    proc = subprocess.Popen([sys.executable, "-m", "tracker", "--store", str(store), "ui", "--port", "0",
                             "--no-open", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if "http://" in line:
            url = line.split("at ", 1)[1].split()[0]
            proc.url = url  # with ?token= under --auth token
            return proc, int(url.split("?", 1)[0].rstrip("/").rsplit(":", 1)[1])
        if proc.poll() is not None:
            break
    proc.kill()
    raise AssertionError(f"tracker ui printed no URL; stderr: {proc.stderr.read()}")


def _stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return err


def _get(port: int, path: str, host: str | None, address: str = "127.0.0.1",
         timeout: float = 10.0, token: str | None = None) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection(address, port, timeout=timeout)
    try:
        conn.putrequest("GET", path, skip_host=True)
        if host is not None:
            conn.putheader("Host", host)
        if token is not None:
            conn.putheader("Authorization", f"Bearer {token}")
        conn.endheaders()
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


@pytest.fixture
def store(tmp_path: Path) -> Path:
    s = tmp_path / "store"
    with tracker.start_run(project="p", name="secret run", store=s, system_metrics=False) as run:
        run.log({"loss": 1.0}, step=0)
    return s


def test_a_foreign_host_is_refused_and_loopback_names_are_served(store):
    proc, port = _serve(store)
    try:
        for host in (f"evil.example.com:{port}", "evil.example.com", f"127.0.0.1.evil.example.com:{port}",
                     f"localhost.evil.example.com:{port}", f"[::2]:{port}", ""):
            status, headers, body = _get(port, "/api/runs", host)
            assert status == 403, (host, status, body[:200])
            assert b"secret run" not in body
            assert "access-control-allow-origin" not in headers
            assert "content-security-policy" in headers
            assert "is not this dashboard's address" in json.loads(body)["error"]
        # The page and the static files too: nothing is served to a rebound name.
        assert _get(port, "/", f"evil.example.com:{port}")[0] == 403
        assert _get(port, "/static/app.js", f"evil.example.com:{port}")[0] == 403
        for host in (f"127.0.0.1:{port}", "127.0.0.1", f"localhost:{port}", "LOCALHOST", f"[::1]:{port}",
                     f"localhost.:{port}"):
            status, _, body = _get(port, "/api/runs", host)
            assert status == 200, (host, status, body[:200])
            assert b"secret run" in body
    finally:
        err = _stop(proc)
    assert "Traceback" not in err


def _own_address() -> str | None:
    """A non-loopback address of this machine, if it has one."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing interface
            addr = s.getsockname()[0]
    except OSError:
        return None
    return None if addr.startswith("127.") or addr == "0.0.0.0" else addr


def test_the_host_it_was_started_with_is_allowed_too(store):
    addr = _own_address()
    if addr is None:
        pytest.skip("this machine has no non-loopback address")
    # A network address needs --auth; the Host check comes first, refusing even the right token.
    proc, port = _serve(store, "--host", addr, "--auth", "token")
    token = proc.url.split("?token=", 1)[1]
    try:
        assert _get(port, "/api/runs", f"{addr}:{port}", address=addr, token=token)[0] == 200
        assert _get(port, "/api/runs", f"{addr}:{port}", address=addr)[0] == 401
        assert _get(port, "/api/runs", f"evil.example.com:{port}", address=addr, token=token)[0] == 403
    finally:
        _stop(proc)
    # Bound to every address: the address the client dialled is this machine's, a rebound name is not.
    proc, port = _serve(store, "--host", "0.0.0.0", "--auth", "token")
    token = proc.url.split("?token=", 1)[1]
    try:
        assert _get(port, "/api/runs", f"{addr}:{port}", address=addr, token=token)[0] == 200
        assert _get(port, "/api/runs", f"127.0.0.1:{port}", token=token)[0] == 200
        assert _get(port, "/api/runs", f"evil.example.com:{port}", address=addr, token=token)[0] == 403
        assert _get(port, "/api/runs", "0.0.0.0", token=token)[0] == 403
    finally:
        _stop(proc)


@pytest.mark.parametrize(("header", "ok"), [
    ("127.0.0.1:5170", True), ("localhost", True), ("[::1]:80", True), ("[0:0:0:0:0:0:0:1]", True),
    ("127.0.0.2", True), ("evil.example.com", False), ("::1", False), ("[::1]x", False), ("[::1", False),
    ("", False), ("localhost:80:80", False), ("10.0.0.5:80", False)])
def test_host_names(header, ok):
    from tracker.ui.hosts import allowed

    assert allowed(header) is ok


def test_extra_hosts_and_the_server_address():
    from tracker.ui.hosts import allowed

    assert allowed("box.lan:5170", ["box.lan"])
    assert allowed("BOX.LAN.", ["box.lan"])
    assert not allowed("evil.example.com", ["box.lan"])
    assert allowed("10.0.0.5:80", server="10.0.0.5")
    assert not allowed("0.0.0.0", ["0.0.0.0"])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_blob_replaced_by_a_fifo_is_an_error_at_once_and_pins_no_thread(tmp_path):
    from tracker.capture.blobs import blob_path

    s = tmp_path / "store"
    src = tmp_path / "model.bin"
    src.write_bytes(os.urandom(5000))
    with tracker.start_run(project="p", store=s, system_metrics=False) as run:
        sha = run.log_artifact(src).sha256
        good = run.log_artifact(tmp_path / "model.bin", name="copy").sha256
    assert good == sha
    other = tmp_path / "other.bin"
    other.write_bytes(b"other bytes")
    with tracker.start_run(project="p", store=s, system_metrics=False) as run2:
        other_sha = run2.log_artifact(other).sha256
    blob = blob_path(s, sha)
    os.chmod(blob.parent, 0o755)
    blob.unlink()
    os.mkfifo(blob)
    proc, port = _serve(s)
    try:
        # More requests than the server has worker threads: a blocking read would pin them all.
        for _ in range(50):
            t0 = time.monotonic()
            status, _, body = _get(port, f"/api/runs/{run.id}/blobs/{sha}", f"127.0.0.1:{port}", timeout=5)
            assert time.monotonic() - t0 < 1.0
            assert status == 500
            assert "is a FIFO (named pipe)" in json.loads(body)["error"]
        status, _, body = _get(port, f"/api/runs/{run2.id}/blobs/{other_sha}", f"127.0.0.1:{port}")
        assert status == 200 and body == b"other bytes"
    finally:
        err = _stop(proc)
    assert "Traceback" not in err
