"""The client's HTTP session against a real HTTP server on 127.0.0.1: retries, Retry-After, refusals, the key.

The server is the standard library's, in a thread, answering what each test scripts (a busy server's 503 and
429, an error that quotes the key); the session is the one the shipper and the readers use.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import socket
import ssl
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tracker.core.errors import TrackerError
from tracker.remote.credentials import find_key, save_key, stored_key
from tracker.remote.session import KeyRefused, RemoteError, RemoteUnavailable, Session, check_transport

KEY = "trk_abc123_" + "s" * 43


class Scripted(http.server.ThreadingHTTPServer):
    """Answers each request with the next ``(status, headers, body)`` of ``script`` (then 200 ``{}``)."""

    daemon_threads = True

    def __init__(self) -> None:
        self.script: list[tuple[int, dict[str, str], dict]] = []
        self.seen: list[tuple[str, str, str | None]] = []
        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        server: Scripted = self.server  # type: ignore[assignment]
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(n)
        server.seen.append((self.command, self.path, self.headers.get("Authorization")))
        status, headers, doc = server.script.pop(0) if server.script else (200, {}, {})
        body = json.dumps(doc).encode()
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = _answer

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def scripted() -> Iterator[Scripted]:
    server = Scripted()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_busy_answers_are_retried_after_retry_after(scripted: Scripted) -> None:
    scripted.script = [(503, {"Retry-After": "0.3"}, {"error": "busy"}),
                       (429, {"Retry-After": "0.3"}, {"error": "slow down"}),
                       (200, {}, {"id": "abc123", "scope": "write"})]
    s = Session(scripted.url, key=KEY)
    t0 = time.monotonic()
    assert s.whoami()["scope"] == "write"
    assert time.monotonic() - t0 >= 0.6  # both waits the server asked for
    assert [m for m, _p, _a in scripted.seen] == ["GET"] * 3
    assert all(a == f"Bearer {KEY}" for _m, _p, a in scripted.seen)


def test_a_request_that_may_not_be_sent_twice_is_not(scripted: Scripted) -> None:
    scripted.script = [(503, {"Retry-After": "0"}, {"error": "busy"})]
    s = Session(scripted.url, key=KEY)
    with pytest.raises(RemoteUnavailable) as err:
        s.json("POST", "/api/v1/runs", {"project": "p"})
    assert len(scripted.seen) == 1 and err.value.retry_after == 0 and err.value.status == 503


def test_backoff_with_jitter_when_nothing_answers() -> None:
    waits: list[float] = []
    s = Session("http://127.0.0.1:9", key=KEY, attempts=4, sleep=waits.append)  # the discard port: refused
    with pytest.raises(RemoteUnavailable) as err:
        s.whoami()
    assert len(waits) == 3 and all(0.5 * 0.25 * 2 ** i <= w <= 0.25 * 2 ** i for i, w in enumerate(waits)), waits
    assert "connection refused" in str(err.value) and KEY not in str(err.value)


def test_the_key_is_in_no_error_and_no_repr(scripted: Scripted) -> None:
    scripted.script = [(401, {}, {"error": f"unknown key {KEY}"}), (500, {}, {"error": f"boom {KEY[11:]}"})]
    s = Session(scripted.url, key=KEY)
    with pytest.raises(KeyRefused) as refused:
        s.whoami()
    with pytest.raises(RemoteError) as failed:
        s.json("GET", "/api/v1/runs/x/segments")
    for text in (str(refused.value), str(failed.value), repr(s)):
        assert KEY not in text and KEY[11:] not in text, text
    assert "abc123" in repr(s) and "***" in str(refused.value)


@pytest.mark.parametrize("url", ["http://192.0.2.1:8443", "http://10.1.2.3", "http://lab.example",
                                 "http://127.0.0.1.nip.io", "http://[2001:db8::1]:80"])
def test_plain_http_off_this_machine_is_refused(url: str) -> None:
    with pytest.raises(TrackerError, match="refusing to send a key over plain http://"):
        Session(url, key=KEY)


@pytest.mark.parametrize("url", ["http://127.0.0.1:5170", "http://127.8.9.10", "http://localhost:1",
                                 "http://[::1]:5170", "https://lab.example", "https://192.0.2.1:8443/tracker"])
def test_https_anywhere_and_http_to_this_machine_are_allowed(url: str) -> None:
    scheme, host, port, base = check_transport(url)
    assert scheme in ("http", "https") and host and port > 0
    assert base == ("/tracker" if url.endswith("/tracker") else "")


def test_a_missing_ca_bundle_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(TrackerError, match="no such CA bundle"):
        Session("https://lab.example", key=KEY, ca_file=tmp_path / "missing.pem")
    (tmp_path / "bad.pem").write_text("not a certificate")
    with pytest.raises(TrackerError, match="not a CA bundle"):
        Session("https://lab.example", key=KEY, ca_file=tmp_path / "bad.pem")


def test_keys_kept_per_server_private_and_the_environment_first(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.delenv("TRACKER_API_KEY", raising=False)
    other = "trk_def456_" + "t" * 43
    path = save_key("https://lab.example:8443", KEY)
    save_key("https://other.example", other)
    assert path == tmp_path / "cfg" / "tracker" / "keys.toml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert find_key("https://lab.example:8443/") == KEY
    assert find_key("https://other.example:443") == other and find_key("https://third.example") is None
    monkeypatch.setenv("TRACKER_API_KEY", other)
    assert find_key("https://lab.example:8443") == other
    os.chmod(path, 0o644)
    with pytest.raises(TrackerError, match="readable by other users") as err:
        stored_key("https://lab.example:8443")
    assert KEY not in str(err.value)


class Tunnel:
    """An HTTP proxy on 127.0.0.1 that answers CONNECT to any name with a tunnel to ``target`` (a port here),
    keeping each CONNECT request's head."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.heads: list[str] = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(4096)
            if not chunk:
                conn.close()
                return
            data += chunk
        self.heads.append(data.split(b"\r\n\r\n")[0].decode())
        up = socket.create_connection(("127.0.0.1", self.target))
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")

        def pipe(a: socket.socket, b: socket.socket) -> None:
            try:
                while chunk := a.recv(65536):
                    b.sendall(chunk)
            except OSError:
                pass
            finally:
                for s in (a, b):
                    with contextlib.suppress(OSError):
                        s.shutdown(socket.SHUT_RDWR)

        threading.Thread(target=pipe, args=(up, conn), daemon=True).start()
        pipe(conn, up)

    def close(self) -> None:
        self.sock.close()


def test_through_an_https_proxy_with_tls_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    cert = ca.issue_cert("lab.test")
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    server = Scripted()
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(ctx)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    tunnel = Tunnel(server.server_address[1])
    try:
        for name in ("NO_PROXY", "no_proxy", "https_proxy"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HTTPS_PROXY", f"http://me:pa%40ss@127.0.0.1:{tunnel.port}")
        server.script = [(200, {}, {"id": "abc123", "scope": "write"})]
        # "lab.test" is never looked up here: the proxy is asked for it, and TLS is checked for that name.
        s = Session("https://lab.test:8443", key=KEY, ca_file=tmp_path / "ca.pem")
        assert s.whoami()["scope"] == "write"
        assert f"via proxy 127.0.0.1:{tunnel.port}" in repr(s) and "pa@ss" not in repr(s)
        head = tunnel.heads[0]
        assert head.startswith("CONNECT lab.test:8443 HTTP/1.")
        assert "Proxy-Authorization: Basic bWU6cGFAc3M=" in head  # me:pa@ss
        assert KEY not in head and scripted_auth(server) == f"Bearer {KEY}"  # the key travels inside TLS only
        monkeypatch.setenv("NO_PROXY", "lab.test,.example.org")
        assert Session("https://lab.test:8443", key=KEY, ca_file=tmp_path / "ca.pem").proxy is None
        assert Session("https://127.0.0.1:8443", key=KEY).proxy is None  # this machine: never through a proxy
        monkeypatch.setenv("HTTPS_PROXY", "socks5://127.0.0.1:1080")
        with pytest.raises(TrackerError, match="expected an http:// proxy"):
            Session("https://lab.example", key=KEY)
    finally:
        tunnel.close()
        server.shutdown()
        server.server_close()


def scripted_auth(server: Scripted) -> str | None:
    return server.seen[-1][2] if server.seen else None
