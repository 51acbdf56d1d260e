"""``tracker server`` over a folder store: keys by the CLI, who may write what, shipped segments and blobs.

One real server process for the module (tests/remote/conftest.py), real HTTP with httpx; the segments
shipped are the bytes real local runs wrote.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import math
import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest

import tracker
from tracker.core.format import check_run_id

from .conftest import ServerProcess

#: Every key this module made: none may appear in anything the server wrote (the last test).
KEYS: list[str] = []


def key(server: ServerProcess, name: str, scope: str = "write", projects: tuple[str, ...] = (),
        expires: str | None = None) -> str:
    made = server.make_key(name, scope, projects, expires)
    KEYS.append(made)
    return made


def local_run(tmp: Path, project: str = "vision", n: int = 5, run_id: str | None = None,
              finish: bool = True) -> tuple[str, Path]:
    """A run written by a real local writer: ``(run id, its segment)``."""
    store = tmp / f"local-{time.monotonic_ns()}"
    run = tracker.start_run(project, "shipped", config={"lr": 0.1}, store=store, run_id=run_id,
                            system_metrics=False, console=False, environment=False)
    for i in range(n):
        run.log({"loss": 1.0 / (i + 1), "acc": i * 0.1}, step=i)
    if finish:
        run.finish()
    seg = next((store / "runs" / run.id).glob("*.jsonl"))
    return run.id, seg


@pytest.fixture(scope="module")
def writer(server: ServerProcess) -> str:
    """One write key for the tests that need any."""
    return key(server, "writer")


def post(client: Any, run_id: str, name: str, offset: int, body: bytes) -> Any:
    return client.post(f"/api/v1/runs/{run_id}/segments/{name}", params={"offset": offset}, content=body)


def test_keys_made_listed_and_revoked_by_the_cli(server: ServerProcess) -> None:
    made = server.cli("keys", "create", "ci", "--scope", "read", "--project", "vision", "--project", "audio",
                      "--expires", "30d", "--format", "json")
    doc = json.loads(made.stdout)
    KEYS.append(doc["key"])
    assert set(doc) == {"id", "key", "name", "scope", "projects", "expires"}
    assert doc["key"].startswith(f"trk_{doc['id']}_") and len(doc["key"].split("_")[2]) == 64
    assert doc["projects"] == ["vision", "audio"] and doc["scope"] == "read"
    assert 29.9 * 86400 < doc["expires"] - time.time() <= 30 * 86400
    folder = Path(server.store) / "server"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "keys.jsonl").stat().st_mode) == 0o600
    listed = server.cli("keys", "list", "--format", "json")
    rows = {r["id"]: r for r in json.loads(listed.stdout)}
    assert rows[doc["id"]]["status"] == "active" and rows[doc["id"]]["name"] == "ci"
    assert doc["key"] not in listed.stdout and doc["key"].split("_")[2] not in server.cli("keys", "list").stdout
    with server.client(doc["key"]) as c:
        assert c.get("/api/v1/whoami").json() == {"id": doc["id"], "name": "ci", "scope": "read",
                                                  "projects": ["vision", "audio"], "expires": doc["expires"]}
    out = server.cli("keys", "revoke", doc["id"])
    assert f"revoked {doc['id']} (ci)" in out.stdout
    assert json.loads(server.cli("keys", "list", "--format", "json").stdout)[-1]["status"] == "revoked"
    with server.client(doc["key"]) as c:
        r = c.get("/api/v1/whoami")
    assert r.status_code == 401 and "revoked" in r.json()["error"] and doc["id"] in r.json()["error"]
    assert doc["key"] not in r.text
    bad = server.cli("keys", "revoke", "000000000000", check=False)
    assert bad.returncode == 1 and "no key '000000000000'" in bad.stderr


def test_expired_and_unknown_keys_are_refused(server: ServerProcess) -> None:
    short = key(server, "short", "read", expires="1s")
    time.sleep(1.2)
    with server.client(short, source="127.0.0.2") as c:
        r = c.get("/api/v1/whoami")
        assert r.status_code == 401 and "expired" in r.json()["error"]
        kid = short.split("_")[1]
        forged = f"trk_{kid}_{'0' * 64}"
        r = c.get("/api/v1/whoami", headers={"Authorization": f"Bearer {forged}"})
        assert r.status_code == 401 and r.json()["error"] == f"unknown API key {kid}"
        assert c.get("/api/v1/whoami", headers={"Authorization": ""}).status_code == 401


def test_a_read_key_may_not_write(server: ServerProcess, tmp_path: Path) -> None:
    reader = key(server, "reader", "read")
    rid, seg = local_run(tmp_path)
    with server.client(reader) as c:
        assert c.get(f"/api/v1/runs/{rid}/segments").json() == {"segments": {}}
        for r in (post(c, rid, seg.name, 0, seg.read_bytes()),
                  c.post("/api/v1/runs", json={"project": "vision"}),
                  c.put(f"/api/v1/blobs/sha256/{hashlib.sha256(b'x').hexdigest()}", content=b"x"),
                  c.get("/api/v1/keys")):
            assert r.status_code == 403, r.text
            assert "has scope read" in r.json()["error"]
    assert not (Path(server.store) / "runs" / rid).exists()


def test_a_key_limited_to_a_project(server: ServerProcess, writer: str, tmp_path: Path) -> None:
    vision = key(server, "vision only", projects=("vision",))
    other, seg = local_run(tmp_path, project="audio")
    mine, mine_seg = local_run(tmp_path, project="vision")
    with server.client(vision) as c:
        r = post(c, other, seg.name, 0, seg.read_bytes())
        assert r.status_code == 403 and "may write only projects 'vision'" in r.json()["error"]
        assert "'audio'" in r.json()["error"]
        assert c.post("/api/v1/runs", json={"project": "audio"}).status_code == 403
        assert post(c, mine, mine_seg.name, 0, mine_seg.read_bytes()).status_code == 200
        made = c.post("/api/v1/runs", json={"project": "vision", "name": "by json"})
        assert made.status_code == 201
        r = c.get("/api/runs")  # the dashboard's API answers for every project: not with this key
        assert r.status_code == 403 and "opens /api/v1/ only" in r.json()["error"]
    assert not (Path(server.store) / "runs" / other).exists()
    # Another key (even with every project) may not append to the runs this one created.
    with server.client(writer) as c:
        more = mine_seg.read_bytes()
        r = post(c, mine, mine_seg.name, len(more), b"")
        assert r.status_code == 403 and "created by another key" in r.json()["error"]
        r = c.post(f"/api/v1/runs/{made.json()['id']}/log", json={"metrics": {"x": 1}})
        assert r.status_code == 403


def test_segments_are_appended_byte_for_byte_once(server: ServerProcess, writer: str, tmp_path: Path) -> None:
    rid, seg = local_run(tmp_path, n=20)
    data = seg.read_bytes()
    lines = data.splitlines(keepends=True)
    half = sum(len(x) for x in lines[:8])
    with server.client(writer) as c:
        r = post(c, rid, seg.name, 0, data[:half])
        assert r.json() == {"offset": half}
        # A gap: the server says what it has, and the client resumes there.
        r = post(c, rid, seg.name, half + len(lines[8]), b"".join(lines[9:]))
        assert r.status_code == 409 and r.json()["offset"] == half
        # Bytes it has are acknowledged again and not written twice.
        assert post(c, rid, seg.name, 0, data[:half]).json() == {"offset": half}
        assert post(c, rid, seg.name, 0, data).json() == {"offset": len(data)}
        assert post(c, rid, seg.name, half, data[half:]).json() == {"offset": len(data)}
        assert c.get(f"/api/v1/runs/{rid}/segments").json() == {"segments": {seg.name: len(data)}}
        # Bytes that differ from those it has are refused.
        changed = data[:half].replace(b'"lr":0.1', b'"lr":0.2')
        r = post(c, rid, seg.name, 0, changed)
        assert r.status_code == 400 and "differ" in r.json()["error"]
        # An empty request at the end is the writer's heartbeat.
        assert post(c, rid, seg.name, len(data), b"").json() == {"offset": len(data)}
    served = Path(server.store) / "runs" / rid / seg.name
    assert served.read_bytes() == data
    assert server.cli("verify", rid).returncode == 0
    info = tracker.open_store(server.store).run(rid).info
    assert info.status == "finished" and info.project == "vision" and info.records == 20


def test_the_same_bytes_sent_at_once_are_written_once(server: ServerProcess, writer: str, tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    rid, seg = local_run(tmp_path, n=200)
    data = seg.read_bytes()
    cuts = [0] + [i + 1 for i in range(len(data)) if data[i:i + 1] == b"\n"][::25]

    def send(i: int) -> list[int]:
        with server.client(writer) as c:
            # Each thread sends the segment in its own pieces: some overlap what others sent, some come early.
            out = []
            for a, b in zip(cuts[i % 3:], cuts[i % 3 + 1:], strict=False):
                r = post(c, rid, seg.name, a, data[a:b])
                out.append(r.status_code)
            out.append(post(c, rid, seg.name, 0, data).status_code)
            return out

    with ThreadPoolExecutor(6) as pool:
        codes = [c for done in pool.map(send, range(6)) for c in done]
    assert set(codes) <= {200, 409} and codes.count(200) >= 6
    assert (Path(server.store) / "runs" / rid / seg.name).read_bytes() == data
    assert server.cli("verify", rid).returncode == 0


def test_a_torn_append_is_healed_after_a_restart(server: ServerProcess, writer: str, tmp_path: Path) -> None:
    rid, seg = local_run(tmp_path, n=10)
    data = seg.read_bytes()
    cut = data.index(b"\n", len(data) // 2) + 1
    served = Path(server.store) / "runs" / rid / seg.name
    with server.client(writer) as c:
        assert post(c, rid, seg.name, 0, data[:cut]).json() == {"offset": cut}
    server.stop()
    with open(served, "ab") as f:  # a server killed in the middle of an append: half a line, never acknowledged
        f.write(data[cut:cut + 30])
    server.start()
    with server.client(writer) as c:
        assert c.get(f"/api/v1/runs/{rid}/segments").json()["segments"][seg.name] == cut + 30
        assert post(c, rid, seg.name, cut, data[cut:]).json() == {"offset": len(data)}
    assert served.read_bytes() == data
    assert server.cli("verify", rid).returncode == 0


def test_a_resumed_writer_and_edits_after_the_fact(server: ServerProcess, writer: str, tmp_path: Path) -> None:
    local = tmp_path / "resumed"
    first = tracker.start_run("vision", "twice", store=local, system_metrics=False, console=False, environment=False)
    first.log({"loss": 1.0}, step=0)
    first.finish()
    again = tracker.start_run(store=local, run_id=first.id, resume=True, system_metrics=False, console=False,
                              environment=False)
    again.log({"loss": 0.5})
    again.finish()
    tracker.open_store(local).tag(first.id, add=["shipped"])
    run_dir = local / "runs" / first.id
    names = sorted(p.relative_to(run_dir).as_posix() for p in run_dir.rglob("*.jsonl"))
    assert len(names) == 3 and names[0].startswith("edits/edits-")
    opening = next(n for n in names if b'"run_started"' in (run_dir / n).read_bytes()[:200])
    with server.client(writer) as c:
        edits = names[0]
        r = post(c, first.id, edits, 0, (run_dir / edits).read_bytes())
        assert r.status_code == 400 and "first segment must begin with run_started" in r.json()["error"]
        for name in [opening, *[n for n in names if n != opening]]:
            data = (run_dir / name).read_bytes()
            assert post(c, first.id, name, 0, data).json() == {"offset": len(data)}
        assert c.get(f"/api/v1/runs/{first.id}/segments").json() == {
            "segments": {n: (run_dir / n).stat().st_size for n in names}}
    served = Path(server.store) / "runs" / first.id
    assert sorted(p.relative_to(served).as_posix() for p in served.rglob("*.jsonl")) == names
    info = tracker.open_store(server.store).run(first.id).info
    assert (info.status, info.writers, info.records, info.tags) == ("finished", 2, 2, ["shipped"])


def test_a_bad_line_names_its_number_and_nothing_is_written(server: ServerProcess, writer: str,
                                                            tmp_path: Path) -> None:
    rid, seg = local_run(tmp_path, n=6)
    lines = seg.read_bytes().splitlines(keepends=True)
    store_run = Path(server.store) / "runs" / rid

    def with_line(i: int, line: bytes) -> bytes:
        return b"".join(lines[:i] + [line] + lines[i + 1:])

    damaged = lines[3].replace(b'"loss":', b'"lossy":')  # its checksum no longer holds
    foreign = json.loads(lines[4][:lines[4].rindex(b',"crc"')] + b"}")
    foreign["w"] = "other-1-abcdef"
    from tracker.core.format import with_crc

    refused = [
        (with_line(3, damaged), 4, "checksum"),
        (with_line(2, b'{"v":1,"kind":"record"\n'), 3, "corrupt"),
        (with_line(4, with_crc(json.dumps(foreign, separators=(",", ":")).encode()[:-1])), 5,
         "written by writer 'other-1-abcdef'"),
        (b"".join(lines[:2] + lines[3:]), 3, "seq 4: expected 3"),
        (b"".join(lines[1:]), 1, "seq 2: expected 1"),
        (b"".join(lines)[:-1], None, "does not end with a newline"),
    ]
    with server.client(writer) as c:
        for body, line, text in refused:
            r = post(c, rid, seg.name, 0, body)
            assert r.status_code == 400, r.text
            assert text in r.json()["error"]
            if line is not None:
                assert r.json()["line"] == line and r.json()["error"].startswith(f"line {line}: ")
            assert not store_run.exists()
        # A record whose data fails its schema (the host's converter): an image record without its fields.
        ok = b"".join(lines[:1])
        assert post(c, rid, seg.name, 0, ok).status_code == 200
        bad = json.loads(lines[1][:lines[1].rindex(b',"crc"')] + b"}")
        bad.update(schema="image", data={"name": "x"})
        r = post(c, rid, seg.name, len(ok), with_crc(json.dumps(bad, separators=(",", ":")).encode()[:-1]))
        assert r.status_code == 400 and r.json()["line"] == 1 and "schema image" in r.json()["error"]
    assert (store_run / seg.name).read_bytes() == ok


def test_blobs_by_content_address(server: ServerProcess, writer: str) -> None:
    data = os.urandom(300_000)
    sha = hashlib.sha256(data).hexdigest()
    blobs = Path(server.store) / "blobs"
    with server.client(writer) as c:
        assert c.head(f"/api/v1/blobs/sha256/{sha}").status_code == 404
        wrong = hashlib.sha256(b"something else").hexdigest()
        r = c.put(f"/api/v1/blobs/sha256/{wrong}", content=data)
        assert r.status_code == 400 and sha in r.json()["error"]
        assert c.head(f"/api/v1/blobs/sha256/{wrong}").status_code == 404
        assert not list((blobs / "tmp").iterdir())

        def chunks() -> Any:
            for i in range(0, len(data), 65536):
                yield data[i:i + 65536]

        r = c.put(f"/api/v1/blobs/sha256/{sha}", content=chunks())  # streamed (chunked)
        assert r.status_code == 201 and r.json() == {"sha256": sha, "size": len(data)}
        head = c.head(f"/api/v1/blobs/sha256/{sha}")
        assert head.status_code == 200 and int(head.headers["content-length"]) == len(data)
        assert c.put(f"/api/v1/blobs/sha256/{sha}", content=data).status_code == 200
        assert c.put("/api/v1/blobs/sha256/ABC", content=b"x").status_code == 400
    assert (blobs / "sha256" / sha[:2] / sha[2:]).read_bytes() == data


def test_bodies_over_their_cap_are_refused(server: ServerProcess, writer: str) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.putrequest("POST", "/api/v1/runs/big1/segments/x-1-abcdef.jsonl?offset=0")
    conn.putheader("Authorization", f"Bearer {writer}")
    conn.putheader("Content-Length", str(65 << 20))
    conn.endheaders()
    r = conn.getresponse()
    assert r.status == 413 and "more than the 67108864" in json.loads(r.read())["error"]
    conn.close()
    with server.client(writer) as c:
        r = c.post("/api/v1/runs", content=b'{"name": "' + b"x" * (17 << 20) + b'"}')
        assert r.status_code == 413
    assert not (Path(server.store) / "runs" / "big1").exists()


@pytest.mark.parametrize("path", [
    "/api/v1/runs/..%2F..%2Fetc/segments/x-1-abcdef.jsonl",
    "/api/v1/runs/r1/segments/..%2F..%2Fescape.jsonl",
    "/api/v1/runs/r1/segments/edits/..%2F..%2Fescape.jsonl",
    "/api/v1/runs/r1/segments/sub/x-1-abcdef.jsonl",
    "/api/v1/runs/r1/segments/.hidden.jsonl",
    "/api/v1/runs/r1/segments/x-1-abcdef.txt",
    "/api/v1/runs/r1/segments/edits/x-1-abcdef.jsonl",
    "/api/v1/runs/a%20b/segments/x-1-abcdef.jsonl",
])
def test_names_are_ids_never_paths(server: ServerProcess, writer: str, path: str) -> None:
    with server.client(writer) as c:
        r = c.post(path + "?offset=0", content=b"{}\n")
    assert r.status_code in (400, 404), r.text
    if r.status_code == 400:
        assert "invalid" in r.json()["error"]
    store = Path(server.store)
    assert not (store.parent / "escape.jsonl").exists() and not (store / "escape.jsonl").exists()
    assert not (store / "runs" / "r1").exists()
    for d in (store / "runs").iterdir() if (store / "runs").exists() else ():
        check_run_id(d.name)


def test_failed_key_checks_are_limited_per_address(server: ServerProcess) -> None:
    good = key(server, "good", "read")
    bad = f"trk_{'a' * 12}_{'b' * 64}"
    with server.client(bad, source="127.0.0.9") as c:
        codes = [c.get("/api/v1/whoami").status_code for _ in range(10)]
        assert codes == [401] * 10
        r = c.get("/api/v1/whoami")
        assert r.status_code == 429 and 1 <= int(r.headers["retry-after"]) <= 60
        assert "too many failed key checks" in r.json()["error"]
        # Even a good key waits, from that address; another address is not held back.
        assert c.get("/api/v1/whoami", headers=server.headers(good)).status_code == 429
    with server.client(good, source="127.0.0.10") as c:
        assert c.get("/api/v1/whoami").status_code == 200


def test_keys_over_http_with_an_admin_key(server: ServerProcess, writer: str) -> None:
    env = {**server.env(server.admin_key)}
    made = server.cli("--store", server.url, "keys", "create", "remote-made", "--scope", "write", env=env)
    remote_key = made.stdout.strip().splitlines()[-1]
    KEYS.append(remote_key)
    kid = remote_key.split("_")[1]
    listed = json.loads(server.cli("--store", server.url, "keys", "list", "--format", "json", env=env).stdout)
    row = next(r for r in listed if r["id"] == kid)
    assert row["creator"].startswith("key ") and "remote-made" == row["name"]
    assert server.cli("--store", server.url, "keys", "revoke", kid, env=env).returncode == 0
    with server.client(remote_key) as c:
        assert c.get("/api/v1/whoami").status_code == 401
    refused = server.cli("--store", server.url, "keys", "list", env=server.env(writer), check=False)
    assert refused.returncode == 1 and "403" in refused.stderr and "needs admin" in refused.stderr
    # The dashboard's API opens with a key too.
    with server.client(writer) as c:
        assert c.get("/api/runs").status_code == 200


def test_json_logging_checks_a_whole_batch_and_resumes_after_a_restart(server: ServerProcess) -> None:
    writer = key(server, "json")
    with server.client(writer) as c:
        rid = c.post("/api/v1/runs", json={"project": "vision", "name": "json", "config": {"a": 1},
                                           "tags": ["t"]}).json()["id"]
        r = c.post(f"/api/v1/runs/{rid}/log", json={"batch": [{"step": 0, "metrics": {"loss": 1.0}},
                                                              {"schema": "image", "data": {"name": "x"}}]})
        assert r.status_code == 400 and r.json()["error"].startswith("record 1: ") and "image" in r.json()["error"]
        assert c.post(f"/api/v1/runs/{rid}/log", json={"metrics": {"loss": 2.0}, "stray": 1}).status_code == 400
        assert c.post(f"/api/v1/runs/{rid}/log", json={"step": 0, "metrics": {"loss": 1.0, "grad": "NaN"}}).json() \
            == {"logged": 1}
        again = c.post("/api/v1/runs", json={"id": rid})
        assert again.status_code == 409 and "already exists" in again.json()["error"]
        assert c.post("/api/v1/runs/nope/log", json={"metrics": {"x": 1}}).status_code == 404
    store = tracker.open_store(server.store)
    assert store.run(rid).info.records == 1 and store.run(rid).info.status == "running"
    server.restart()  # the same port and store: the open run is ended as crashed, saying why
    # Ended by the server as it stopped (never "finished" by the interpreter's exit), so it reads crashed.
    assert store.run(rid).info.status == "crashed"
    with server.client(writer) as c:
        assert c.post(f"/api/v1/runs/{rid}/log", json={"metrics": {"loss": 0.5}}).json() == {"logged": 1}
        assert store.run(rid).info.status == "running"
        assert c.post(f"/api/v1/runs/{rid}/finish", json={"status": "failed", "error": "diverged"}).json() == \
            {"id": rid, "status": "failed"}
    info = store.run(rid).info
    assert (info.status, info.records, info.error["message"]) == ("failed", 2, "diverged")
    metrics = store.run(rid).metrics()
    assert list(metrics["step"]) == [0, 1] and math.isnan(metrics["grad"][0]) and math.isnan(metrics["grad"][1])
    keys = {k["name"]: k for k in json.loads(server.cli("keys", "list", "--format", "json").stdout)}
    assert keys["json"]["last_used"] is not None and time.time() - keys["json"]["last_used"] < 120


def test_no_key_in_anything_the_server_wrote(server: ServerProcess) -> None:
    """Every key of the module: in no file of the server's folder (store, log), nor its command line."""
    assert KEYS
    secrets = [k.encode() for k in [*KEYS, server.admin_key]] + [k.split("_")[2].encode() for k in KEYS]
    cmdline = Path(f"/proc/{server.proc.pid}/cmdline").read_bytes()
    found = []
    for path in [*Path(server.folder).rglob("*")]:
        if path.is_file():
            data = path.read_bytes()
            found += [(str(path), s[:12]) for s in secrets if s in data]
    assert not found, found
    assert not any(s in cmdline for s in secrets)
    assert "trk_" not in server.text()
