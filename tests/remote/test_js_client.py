"""The JavaScript client (clients/js/) against a real ``tracker server``: its own tests on Node's test runner,
and a Node script whose run the server's store then holds, record for record."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

import tracker

from ..sysdeps import require_node

JS = Path(__file__).resolve().parents[2] / "clients" / "js"


def test_the_clients_own_tests_pass_against_the_server(server: Any) -> None:
    node = require_node()
    key = server.make_key("js-tests", "write", ["js"])
    res = subprocess.run([node, "--test", "test/"], cwd=JS, capture_output=True, text=True, timeout=300,
                         env=server.env(key))
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    # Every test ran (those against the server too: none skipped).
    assert "# fail 0" in res.stdout and "# skipped 0" in res.stdout, res.stdout[-2000:]
    assert "# pass 13" in res.stdout, res.stdout[-2000:]
    assert key not in res.stdout + res.stderr


def test_a_node_script_logs_a_run_the_store_holds(server: Any) -> None:
    node = require_node()
    key = server.make_key("js-example", "write")
    res = subprocess.run([node, "examples/log.mjs"], cwd=JS, capture_output=True, text=True, timeout=120,
                         env={**server.env(key), "TRACKER_PROJECT": "js-example"})
    assert res.returncode == 0, res.stderr
    run_id = res.stdout.strip().splitlines()[-1]
    view = tracker.open_store(server.store).run(run_id)
    info = view.info
    assert (info.name, info.project, info.status, info.tags) == ("js-example", "js-example", "finished", ["js"])
    assert info.config == {"lr": 0.01, "layers": 3}
    got = [(r.step, r.data) for r in view.records("metrics")]
    assert got == [(step, {"loss": 1 / (step + 1), "acc": step / 10}) for step in range(10)]
    assert os.environ.get("TRACKER_API_KEY") != key


def test_over_https_with_the_labs_ca_node_logs_and_python_reads(server_factory: Any, tmp_path: Path,
                                                                 monkeypatch: Any) -> None:
    """The lab's own CA (made here): Node trusts it through NODE_EXTRA_CA_CERTS, open_store through
    TRACKER_CA_FILE; without it, each refuses the certificate in one line, at once."""
    trustme = pytest.importorskip("trustme", reason="the test extra (trustme) is not installed")
    node = require_node()
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    ca_pem, cert_pem, key_pem = tmp_path / "ca.pem", tmp_path / "cert.pem", tmp_path / "key.pem"
    ca.cert_pem.write_to_path(str(ca_pem))
    for i, pem in enumerate(cert.cert_chain_pems):
        pem.write_to_path(str(cert_pem), append=i > 0)
    cert.private_key_pem.write_to_path(str(key_pem))
    server = server_factory("--tls-cert", str(cert_pem), "--tls-key", str(key_pem), scheme="https",
                            verify=str(ca_pem))
    key = server.make_key("js-tls", "write")
    env = {**server.env(key), "TRACKER_PROJECT": "tls"}
    started = time.monotonic()
    refused = subprocess.run([node, "examples/log.mjs"], cwd=JS, capture_output=True, text=True, timeout=120, env=env)
    assert refused.returncode != 0 and "certificate is not trusted" in refused.stderr
    assert "NODE_EXTRA_CA_CERTS" in refused.stderr and key not in refused.stderr
    assert time.monotonic() - started < 10  # not retried (retries would wait 12.8 s at least)
    res = subprocess.run([node, "examples/log.mjs"], cwd=JS, capture_output=True, text=True, timeout=120,
                         env={**env, "NODE_EXTRA_CA_CERTS": str(ca_pem)})
    assert res.returncode == 0, res.stderr
    run_id = res.stdout.strip().splitlines()[-1]
    monkeypatch.setenv("TRACKER_API_KEY", key)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("TRACKER_CA_FILE", raising=False)
    with pytest.raises(tracker.TrackerError, match="certificate is not trusted"):
        tracker.open_store(server.url).run(run_id)
    monkeypatch.setenv("TRACKER_CA_FILE", str(ca_pem))
    view = tracker.open_store(server.url).run(run_id)
    assert (view.info.project, view.info.status) == ("tls", "finished")
    assert list(view.metrics()["loss"]) == [1 / (s + 1) for s in range(10)]
