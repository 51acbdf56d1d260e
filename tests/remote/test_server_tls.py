"""``tracker server --tls-cert/--tls-key`` with a CA the test makes (trustme), ``--proxy-headers`` and
``--allow-host``, keys beside ``--auth token``, ``--max-writes``."""

from __future__ import annotations

import json
import ssl
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .conftest import ServerProcess, tracker_cmd

trustme = pytest.importorskip("trustme", reason="the test extra (trustme) is not installed")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A CA, and a certificate of 127.0.0.1 and localhost it signed: PEM files."""
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    folder = tmp_path_factory.mktemp("pki")
    paths = {"ca": folder / "ca.pem", "cert": folder / "cert.pem", "key": folder / "key.pem",
             "other_key": folder / "other.pem"}
    ca.cert_pem.write_to_path(str(paths["ca"]))
    cert.cert_chain_pems[0].write_to_path(str(paths["cert"]))
    for pem in cert.cert_chain_pems[1:]:
        pem.write_to_path(str(paths["cert"]), append=True)
    cert.private_key_pem.write_to_path(str(paths["key"]))
    trustme.CA().issue_cert("127.0.0.1").private_key_pem.write_to_path(str(paths["other_key"]))
    return paths


@pytest.fixture(scope="module")
def tls_server(server_factory: Any, pki: dict[str, Path]) -> ServerProcess:
    return server_factory("--tls-cert", str(pki["cert"]), "--tls-key", str(pki["key"]), scheme="https",
                          verify=str(pki["ca"]))


def test_https_with_the_labs_ca(tls_server: ServerProcess, pki: dict[str, Path]) -> None:
    import httpx

    key = tls_server.make_key("tls", "write")
    with tls_server.client(key) as c:
        r = c.get("/api/v1/whoami")
        assert r.status_code == 200 and r.json()["name"] == "tls"
        made = c.post("/api/v1/runs", json={"project": "p", "name": "over tls"})
        assert made.status_code == 201
        assert c.post(f"/api/v1/runs/{made.json()['id']}/log", json={"metrics": {"loss": 1.0}}).json() == \
            {"logged": 1}
    # Verification is never off by itself: without the lab's CA, the certificate is refused.
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        httpx.get(f"{tls_server.url}/api/v1/whoami", headers=tls_server.headers(key))
    # Plain http to the TLS port gets no answer of the API.
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://127.0.0.1:{tls_server.port}/api/v1/whoami", headers=tls_server.headers(key), timeout=5)
    context = ssl.create_default_context(cafile=str(pki["ca"]))
    with context.wrap_socket(__import__("socket").create_connection(("127.0.0.1", tls_server.port)),
                             server_hostname="127.0.0.1") as s:
        assert s.version() in ("TLSv1.2", "TLSv1.3")
    assert f"https://127.0.0.1:{tls_server.port}/" in tls_server.text()
    assert "trk_" not in tls_server.text()


def test_keys_over_https_with_the_labs_ca(tls_server: ServerProcess, pki: dict[str, Path]) -> None:
    env = {**tls_server.env(tls_server.admin_key), "TRACKER_CA_FILE": str(pki["ca"])}
    made = tls_server.cli("--store", tls_server.url, "keys", "create", "over https", "--scope", "read",
                          "--format", "json", env=env)
    doc = json.loads(made.stdout)
    listed = tls_server.cli("--store", tls_server.url, "keys", "list", env=env).stdout
    assert doc["id"] in listed and doc["key"] not in listed
    # Without the lab's CA the client refuses the certificate: verification is never off by itself.
    refused = tls_server.cli("--store", tls_server.url, "keys", "list", check=False,
                             env=tls_server.env(tls_server.admin_key))
    assert refused.returncode == 1 and "certificate is not trusted" in refused.stderr
    assert tls_server.admin_key not in refused.stderr + refused.stdout
    cmdline = Path(f"/proc/{tls_server.proc.pid}/cmdline").read_bytes()
    assert b"trk_" not in cmdline and doc["key"].encode() not in Path(tls_server.log).read_bytes()


def test_tls_files_that_do_not_fit_are_one_line(tmp_path: Path, pki: dict[str, Path]) -> None:
    for args, text in ((["--tls-cert", str(pki["cert"])], "--tls-cert and --tls-key go together"),
                       (["--tls-cert", str(pki["cert"]), "--tls-key", str(pki["other_key"])], "cannot use --tls-cert"),
                       (["--tls-cert", str(tmp_path / "nope.pem"), "--tls-key", str(pki["key"])],
                        "nope.pem: no such file")):
        out = subprocess.run(tracker_cmd(tmp_path / "store", "server", "--port", "0", *args), capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 2, out.stderr
        assert text in out.stderr and "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_proxy_headers_and_keys_beside_a_token(server_factory: Any) -> None:
    proxied = server_factory("--proxy-headers", "--auth", "token", "--allow-host", "Lab.Example.org")
    bad = f"trk_{'c' * 12}_{'d' * 64}"
    good = proxied.make_key("behind a proxy", "read")
    with proxied.client(bad, headers={"X-Forwarded-For": "203.0.113.7", "X-Forwarded-Proto": "https"}) as c:
        assert [c.get("/api/v1/whoami").status_code for _ in range(10)] == [401] * 10
        assert c.get("/api/v1/whoami").status_code == 429
    # The proxy's own address (127.0.0.1) is not held back: another client behind it gets in.
    with proxied.client(good, headers={"X-Forwarded-For": "198.51.100.2"}) as c:
        assert c.get("/api/v1/whoami").status_code == 200
    assert "203.0.113.7" in proxied.text()  # the refused client is named by its own address
    # --auth token: the dashboard's API needs the token or a session, and a key opens it too.
    with proxied.client() as c:
        assert c.get("/api/runs").status_code == 401
        assert c.get("/", follow_redirects=False).status_code in (302, 303, 307)
        assert c.get("/api/v1/openapi.json").status_code == 200
        assert c.get("/api/v1/whoami").status_code == 401
    with proxied.client(good) as c:
        assert c.get("/api/runs").status_code == 200
        # The proxy passes on its site's name: that one is let in, any other is refused (DNS rebinding).
        assert c.get("/api/runs", headers={"Host": "lab.example.org"}).status_code == 200
        assert c.get("/api/runs", headers={"Host": "evil.example"}).status_code == 403
    text = proxied.text()
    assert "?token=" in text and good not in text and "trk_" not in text


def test_off_loopback_it_needs_auth(tmp_path: Path) -> None:
    out = subprocess.run(tracker_cmd(tmp_path / "store", "server", "--host", "0.0.0.0", "--port", "0"),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "start it with --auth token" in out.stderr and "tracker server --host" in out.stderr
    out = subprocess.run(tracker_cmd(tmp_path / "store", "server", "--allow-host", "https://lab:443/"),
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--allow-host: expected a host name" in out.stderr


def test_writes_over_the_cap_are_told_to_come_back(server_factory: Any) -> None:
    """--max-writes 1: a slow upload under way, a second writing request is answered 503 with Retry-After."""
    import hashlib
    import threading
    import time

    busy = server_factory("--max-writes", "1")
    key = busy.make_key("slow", "write")
    data = b"x" * 300_000
    sha = hashlib.sha256(data).hexdigest()
    started = threading.Event()

    def slowly() -> Any:
        yield data[:1000]
        started.set()
        time.sleep(2.0)
        yield data[1000:]

    answers: list[int] = []
    with busy.client(key) as slow, busy.client(key) as other:
        t = threading.Thread(target=lambda: answers.append(slow.put(f"/api/v1/blobs/sha256/{sha}",
                                                                    content=slowly()).status_code))
        t.start()
        assert started.wait(10)
        time.sleep(0.3)
        r = other.post("/api/v1/runs/r1/segments/w-1-abcdef.jsonl?offset=0", content=b"")
        assert r.status_code == 503 and r.headers["retry-after"] == "1" and "busy" in r.json()["error"]
        assert other.get("/api/v1/whoami").status_code == 200  # reading is not held back
        t.join(30)
        assert answers == [201]
        assert other.head(f"/api/v1/blobs/sha256/{sha}").status_code == 200
