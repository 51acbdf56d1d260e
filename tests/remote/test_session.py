"""The client's HTTP session against a real HTTP server on 127.0.0.1: retries, Retry-After, refusals, the key.

The server is the standard library's, in a thread, answering what each test scripts (a busy server's 503 and
429, an error that quotes the key); the session is the one the shipper and the readers use.
"""

from __future__ import annotations

import http.server
import json
import os
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
