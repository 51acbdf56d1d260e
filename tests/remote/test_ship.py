"""The shipper against a real ``tracker server`` process, with real client processes and their followers.

Every record once through a server restart, `log` never waiting on it; a client killed with SIGKILL
completed by `tracker sync URL`; refused keys (revoked, read-only, another project) as one line with
the run kept locally; plain http:// to another host refused before any connection; TLS with the
lab's own CA, an untrusted certificate refused; `tracker login`; the key in no byte and no command
line of the client's.
"""

from __future__ import annotations

import json
import os
import signal
import ssl
import stat
import time
from pathlib import Path
from typing import Any

import pytest

import tracker

from .conftest import ServerProcess
from .shipping import Client, alive, local_lines, new_key, same_on_server, server_files, wait

#: Logs n records, 500 at a time with a pause between (the server is restarted meanwhile), and prints its
#: longest `log` call: the wall time, and the wall time less what the machine kept it waiting for a CPU
#: (/proc/thread-self/schedstat: a loaded machine's scheduling is not the shipper's doing).
LOGGER = """
    import sys, time, tracker
    sched = open("/proc/thread-self/schedstat", "rb", buffering=0)
    def waited():
        sched.seek(0)
        return int(sched.read().split()[1]) / 1e9
    n = int(sys.argv[1])
    worst = worst_running = 0.0
    with tracker.start_run(project="vision", name="restart", system_metrics=False) as run:
        print(run.id, flush=True)
        for i in range(n):
            w0 = waited()
            t0 = time.perf_counter()
            run.log({"loss": 1.0 / (i + 1), "i": i})
            t1 = time.perf_counter()
            worst = max(worst, t1 - t0)
            worst_running = max(worst_running, t1 - t0 - (waited() - w0))
            if i % 500 == 499:
                time.sleep(0.02)
    print(worst, worst_running, flush=True)
"""

#: A short run with an artifact, printing its id.
SHORT = """
    import os, sys, tracker
    with open(f"weights-{os.getpid()}.bin", "wb") as f:
        f.write(bytes(range(256)) * 64)
    with tracker.start_run(project=sys.argv[1], name="short", system_metrics=False) as run:
        print(run.id, flush=True)
        for i in range(100):
            run.log({"loss": 1.0 / (i + 1)})
        run.log_artifact(f"weights-{os.getpid()}.bin", name="weights")
"""


@pytest.fixture
def clients(tmp_path: Path) -> Any:
    made: list[Client] = []

    def make(server: ServerProcess, key: str | None, name: str = "client", **kw: Any) -> Client:
        c = Client(tmp_path / name, server, key, **kw)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


def key_id(key: str) -> str:
    return key.split("_")[1]


def stderr_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_every_record_arrives_once_through_a_server_restart(server: ServerProcess, clients: Any) -> None:
    key = new_key(server, "trainer", "write", ["vision"])
    client = clients(server, key)
    child = client.python(LOGGER, "50000")
    rid = child.stdout.readline().strip()
    assert rid, child.stderr.read()
    run_dir = server.store / "runs" / rid
    wait(lambda: any(p.stat().st_size > 20_000 for p in run_dir.glob("*.jsonl")), 30, "the first lines on the server")
    follower = client.follower_pid()
    # The key is on no command line: the child's, the follower's.
    for pid in (child.pid, follower):
        assert key.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes()
    server.restart()
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    worst, worst_running = map(float, out.split()[-2:])
    # `log` never waits on the server: its longest call, less the time the loaded machine kept it off a CPU.
    assert worst_running < 0.1, (worst, worst_running)
    # One warning line while the server was away, and nothing else.
    assert len(stderr_lines(err)) == 1 and "out of reach" in err, err
    wait(lambda: same_on_server(client.store, server.store, rid), 60, "every line on the server")
    # Exactly once: the server's records are the client's, in order, each once.
    mine = tracker.open_store(client.store).run(rid).metrics()
    theirs = tracker.open_store(server.store).run(rid).metrics()
    assert theirs["i"].tolist() == mine["i"].tolist() == list(range(50_000))
    assert theirs["step"].tolist() == mine["step"].tolist()
    # The key is in no byte the client wrote: its store, the follower's log and status.
    client.stop_follower()
    for path in client.store.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path
    assert key_id(key) in (client.store / "team" / "follower.log").read_text()  # the public id is named


def test_a_client_killed_mid_run_is_completed_by_tracker_sync(server: ServerProcess, clients: Any) -> None:
    key = new_key(server, "killed", "write")
    client = clients(server, key)
    code = """
        import tracker
        open("weights.bin", "wb").write(b"w" * 100_000)
        run = tracker.start_run(project="vision", name="killed", system_metrics=False)
        run.log_artifact("weights.bin", name="weights")
        print(run.id, flush=True)
        i = 0
        while True:
            run.log({"loss": 1.0 / (i + 1)})
            i += 1
            if i == 2000:
                print("going", flush=True)
    """
    child = client.python(code)
    rid = child.stdout.readline().strip()
    assert child.stdout.readline().strip() == "going", child.stderr.read()
    follower = client.follower_pid()
    # The follower is killed first (nothing ships any more), then the training process.
    os.kill(follower, signal.SIGKILL)
    wait(lambda: not alive(follower), 10, "the follower to die")
    time.sleep(0.2)
    os.kill(child.pid, signal.SIGKILL)
    child.wait(10)
    client.env["TRACKER_FOLLOWER_LINGER"] = "0.1"
    status = client.tracker("sync", "--status", "--format", "json")
    assert status.returncode == 0, status.stderr
    doc = json.loads(status.stdout)
    behind = {r["run_id"]: r for r in doc["runs"]}
    assert behind[rid]["bytes_behind"] > 0 and doc["url"] == server.url
    res = client.tracker("sync", server.url)
    assert res.returncode == 0, res.stderr + res.stdout
    assert "shipped 1 run" in res.stdout and key not in res.stdout + res.stderr
    assert same_on_server(client.store, server.store, rid)
    # The artifact's blob went before the lines naming it, and the server's reader finds it whole.
    view = tracker.open_store(server.store).run(rid)
    art = [r for r in view.records("artifact")][0]
    assert (server.store / "blobs").exists() and tracker.open_store(server.store).blobs.exists(art.data["sha256"])
    again = client.tracker("sync", server.url)  # nothing twice
    assert again.returncode == 0 and "shipped 0 runs" in again.stdout, again.stdout
    assert same_on_server(client.store, server.store, rid)


def test_a_revoked_key_is_one_line_and_the_run_goes_on_locally(server: ServerProcess, clients: Any) -> None:
    key = new_key(server, "revoked", "write")
    server.cli("keys", "revoke", key_id(key))
    client = clients(server, key)
    child = client.python(SHORT, "vision")
    out, err = child.communicate(timeout=60)
    rid = out.strip()
    assert child.returncode == 0, err
    lines = stderr_lines(err)
    assert len(lines) == 1 and "refused key" in lines[0] and key_id(key) in lines[0], err
    assert key not in err
    run = tracker.open_store(client.store).run(rid)
    assert run.info.status == "finished" and len(run.metrics()["loss"]) == 100
    assert not (server.store / "runs" / rid).exists()


def test_a_read_key_is_refused_on_write(server: ServerProcess, clients: Any) -> None:
    key = new_key(server, "reader", "read")
    client = clients(server, key)
    child = client.python(SHORT, "vision")
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    lines = stderr_lines(err)
    assert len(lines) == 1 and "scope 'read'" in lines[0] and "write key" in lines[0], err
    assert not (server.store / "runs" / out.strip()).exists()
    res = client.tracker("sync", server.url)
    assert res.returncode == 1 and "scope 'read'" in res.stderr and key not in res.stderr


def test_a_key_limited_to_one_project(server: ServerProcess, clients: Any) -> None:
    key = new_key(server, "vision-only", "write", ["vision"])
    client = clients(server, key)
    ok, other = client.python(SHORT, "vision"), client.python(SHORT, "audio")  # at once, into one store
    out, err = ok.communicate(timeout=60)
    assert ok.returncode == 0 and stderr_lines(err) == [], err
    wait(lambda: same_on_server(client.store, server.store, out.strip()), 30, "the vision run on the server")
    out, err = other.communicate(timeout=60)
    rid = out.strip()
    assert other.returncode == 0, err
    lines = stderr_lines(err)
    assert len(lines) == 1 and f"run {rid}" in lines[0] and "403" in lines[0], err
    assert not (server.store / "runs" / rid).exists()
    assert tracker.open_store(client.store).run(rid).info.status == "finished"


#: Runs a tracker command (or a run) with an audit hook that reports every connection attempt.
AUDITED = """
    import sys
    tried = []
    sys.addaudithook(lambda event, args: tried.append(args) if event == "socket.connect" else None)
    from tracker.cli import main
    try:
        main(sys.argv[1:])
    except SystemExit as exc:
        print("connections:", tried, file=sys.stderr)
        raise
"""


def test_plain_http_to_another_host_is_refused_before_anything_is_sent(server: ServerProcess, clients: Any,
                                                                       tmp_path: Path) -> None:
    key = new_key(server, "plain", "write")
    client = clients(server, key)
    (tmp_path / "key").write_text(key)
    for args in (["login", "http://192.0.2.1:8443", "--key-file", str(tmp_path / "key")],
                 ["sync", "http://192.0.2.1:8443"], ["sync", "http://lab.example", "--status"]):
        child = client.python(AUDITED, *args)
        out, err = child.communicate(timeout=60)
        assert child.returncode != 0
        assert "refusing to send a key over plain http://" in err and "use https://" in err, err
        assert "connections: []" in err, err
        assert key not in out + err


def test_tls_with_the_labs_own_ca_and_an_untrusted_certificate_refused(server_factory: Any, clients: Any,
                                                                      tmp_path: Path) -> None:
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1", "localhost")
    ca_file, cert_file, key_file = tmp_path / "ca.pem", tmp_path / "cert.pem", tmp_path / "key.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    cert.private_key_pem.write_to_path(str(key_file))
    cert.cert_chain_pems[0].write_to_path(str(cert_file))
    for blob in cert.cert_chain_pems[1:]:
        with open(cert_file, "ab") as f:
            f.write(blob.bytes())
    server = server_factory("--tls-cert", str(cert_file), "--tls-key", str(key_file), scheme="https",
                            verify=ssl.create_default_context(cafile=str(ca_file)))
    key = new_key(server, "tls", "write")
    (tmp_path / "key").write_text(key + "\n")
    # Not trusted by the system's authorities: refused in one line, never sent in clear.
    untrusted = clients(server, None, "untrusted")
    res = untrusted.tracker("login", server.url, "--key-file", str(tmp_path / "key"))
    assert res.returncode == 1 and "certificate is not trusted" in res.stderr and "TRACKER_CA_FILE" in res.stderr
    assert len(stderr_lines(res.stderr)) == 1 and key not in res.stderr
    # With the lab's CA: login keeps the key (mode 0600), and a run ships with it (no key in the environment).
    client = clients(server, None, "trusted", extra={"TRACKER_CA_FILE": str(ca_file)})
    res = client.tracker("login", server.url, "--key-file", str(tmp_path / "key"))
    assert res.returncode == 0, res.stderr
    assert f"with key {key_id(key)}" in res.stdout and "scope write" in res.stdout and key not in res.stdout
    keys = client.folder / "config" / "tracker" / "keys.toml"
    assert stat.S_IMODE(keys.stat().st_mode) == 0o600 and key in keys.read_text()
    child = client.python(SHORT, "vision")
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0 and stderr_lines(err) == [], err
    rid = out.strip()
    wait(lambda: same_on_server(client.store, server.store, rid), 30, "the run on the server over TLS")
    assert server_files(server.store, rid) == local_lines(client.store, rid)


#: A run started by one process and resumed by another (two segments), printing to its console.
RESUMED = """
    import sys, tracker
    with tracker.start_run(project="vision", name="two-writers", run_id=sys.argv[1], resume=True,
                           system_metrics=False) as run:
        print("hello from", sys.argv[2])
        for i in range(50):
            run.log({"loss": 1.0 / (i + 1)})
"""


def test_resumed_runs_edits_console_and_environment_travel_too(server: ServerProcess, clients: Any) -> None:
    key = new_key(server, "everything", "write")
    client = clients(server, key, extra={"TRACKER_CONSOLE": "wrap", "TRACKER_ENVIRONMENT": "on"})
    rid = "twowriters"
    for who in ("first", "second"):
        child = client.python(RESUMED, rid, who)
        out, err = child.communicate(timeout=60)
        assert child.returncode == 0 and stderr_lines(err) == [], err
    res = client.tracker("tag", rid, "--add", "shipped")
    assert res.returncode == 0, res.stderr
    wait(lambda: same_on_server(client.store, server.store, rid), 30, "both segments and the edit on the server")
    assert any(n.startswith("edits/") for n in local_lines(client.store, rid))
    theirs = tracker.open_store(server.store).run(rid)
    assert "shipped" in theirs.info.tags and len(theirs.metrics()["loss"]) == 100
    texts = [r.data["text"] for r in theirs.records("console")]
    assert any("hello from first" in t for t in texts) and any("hello from second" in t for t in texts)
    # The environment's package list went as a blob before the lines naming it.
    env = [r for r in theirs.records("environment")]
    assert env and all(tracker.open_store(server.store).blobs.exists(r.data["packages"]) for r in env)


def test_a_new_follower_asks_the_server_only_about_runs_that_changed(server: ServerProcess, clients: Any) -> None:
    from tracker.remote.session import RemoteUnavailable, Session
    from tracker.remote.shipper import Shipper

    key = new_key(server, "cache", "write")
    client = clients(server, key)
    child = client.python(SHORT, "vision")
    out, err = child.communicate(timeout=60)
    rid = out.strip()
    assert child.returncode == 0, err
    wait(lambda: same_on_server(client.store, server.store, rid), 30, "the run on the server")
    client.stop_follower()  # it writes what the server has whole
    cache = client.store / "team" / "shipped.json"
    doc = json.loads(cache.read_text())
    assert doc["url"] == server.url and set(doc["runs"][rid]) == set(local_lines(client.store, rid))
    assert key not in cache.read_text()
    # The same cache for a server that does not answer: an unchanged run costs no request at all...
    dead = Session("http://127.0.0.1:9", key=key, attempts=1)
    cache.write_text(json.dumps({**doc, "url": dead.url}))
    shipper = Shipper(client.store, dead, cache=cache)
    assert shipper.ship_run(rid) is False
    # ...and a run that changed since is asked about.
    assert client.tracker("tag", rid, "--add", "later").returncode == 0
    with pytest.raises(RemoteUnavailable):
        shipper.ship_run(rid)


def test_finish_waits_at_most_finish_timeout_then_names_tracker_sync(server: ServerProcess, clients: Any) -> None:
    key = new_key(server, "offline", "write")
    down = "http://127.0.0.1:9"  # the discard port, where nothing listens: a laptop offline
    client = clients(server, key, url=down, finish_timeout=2)
    child = client.python(SHORT, "vision")
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    rid = out.strip()
    lines = stderr_lines(err)
    # The last line says what finish() did; before it, at most the one warning that the server is out of reach
    # (a follower slow to start on a loaded machine may not have tried yet).
    assert f"run {rid}" in lines[-1] and "waited 2s" in lines[-1], err
    assert f"`tracker sync {down}` ships the rest" in lines[-1]
    assert len(lines) <= 2 and all("out of reach" in x and "connection refused" in x for x in lines[:-1]), err
    # Back online (here: the lab's server), `tracker sync URL` ships it all.
    res = client.tracker("sync", server.url)
    assert res.returncode == 0, res.stderr
    assert same_on_server(client.store, server.store, rid)
