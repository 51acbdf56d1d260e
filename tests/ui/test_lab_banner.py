"""`tracker ui --host 0.0.0.0 --auth token` prints URLs a colleague can open, and lets those names in.

A real `tracker ui` process: its banner names this machine by its host name
and its non-loopback addresses (each with the token), then 127.0.0.1; the
Host check answers each name it printed and still refuses any other.
"""

from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

pytest.importorskip("uvicorn")


def _outgoing_ipv4() -> str | None:
    """The address traffic to the network leaves from (no packet is sent), if not loopback."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))
            addr = s.getsockname()[0]
    except OSError:
        return None
    return None if addr.startswith("127.") or addr == "0.0.0.0" else addr


def _get(connect: str, port: int, host_header: str, token: str) -> int:
    conn = http.client.HTTPConnection(connect, port, timeout=20)
    try:
        conn.putrequest("GET", "/api/runs", skip_host=True)
        conn.putheader("Host", host_header)
        conn.putheader("Authorization", f"Bearer {token}")
        conn.endheaders()
        return conn.getresponse().status
    finally:
        conn.close()


def test_the_banner_of_every_address_names_this_machine_and_the_host_check_lets_those_names_in(tmp_path: Path):
    out = tmp_path / "ui.out"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("DISPLAY", None)
    with open(out, "wb") as so, open(tmp_path / "ui.err", "wb") as se:
        proc = subprocess.Popen([sys.executable, "-m", "tracker", "--store", str(tmp_path / "store"), "ui",
                                 "--host", "0.0.0.0", "--port", "0", "--no-open", "--auth", "token"],
                                stdout=so, stderr=se, env=env)
    try:
        deadline = time.monotonic() + 60
        # The loopback URL comes last: the banner is whole once it is there.
        while "http://127.0.0.1:" not in out.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "ui.err").read_text()
            time.sleep(0.05)
        lines = out.read_text().splitlines()
        assert lines[0].startswith("tracker ui: serving ") and all(ln.startswith("  or http://") for ln in lines[1:])
        urls = [lines[0].split(" at ", 1)[1].split()[0]] + [ln.split()[1] for ln in lines[1:]]
        parts = [urlsplit(u) for u in urls]
        hosts = [p.hostname for p in parts]
        port = parts[0].port
        token = parts[0].query.removeprefix("token=")
        assert len(token) >= 40 and all(p.query == f"token={token}" and p.port == port for p in parts)
        # Its host name first, this machine's addresses next, 127.0.0.1 last; never 0.0.0.0
        assert hosts[0] == socket.gethostname().lower() and hosts[-1] == "127.0.0.1" and "0.0.0.0" not in hosts
        addr = _outgoing_ipv4()
        if addr is not None:
            assert addr in hosts
        for h in hosts:
            # Each name it printed is let in (the request reaches the server over loopback, naming h)...
            assert _get("127.0.0.1", port, f"{h}:{port}", token) == 200, h
        for h in hosts[1:-1]:
            # ...and an address it printed is one a client can dial.
            assert _get(h, port, f"{h}:{port}", token) == 200, h
        try:
            socket.getaddrinfo(hosts[0], port, socket.AF_INET)
        except OSError:
            pass  # the host name has no address here: only a colleague's resolver would know it
        else:
            assert _get(hosts[0], port, f"{hosts[0]}:{port}", token) == 200
        # Any other name is still refused, the token notwithstanding.
        for evil in (f"evil.example.com:{port}", f"{hosts[0]}.evil.example.com:{port}", "0.0.0.0"):
            assert _get("127.0.0.1", port, evil, token) == 403, evil
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert token not in (tmp_path / "ui.err").read_text()
