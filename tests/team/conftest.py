"""Fixtures of the team tests: a folder store of every kind of run and the database it was synced to; an S3
server on 127.0.0.1 and a bucket per test."""

from __future__ import annotations

import itertools
import os
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..childenv import child_environ
from ..query.conftest import pg_server  # noqa: F401 - the one PostgreSQL server of the session
from .support import build_store


def pytest_configure(config: pytest.Config) -> None:
    # Starlette's test client still works on httpx; its notice about httpx2 is not ours to fix.
    config.addinivalue_line("filterwarnings", "ignore:Using `httpx` with `starlette.testclient`")


_dbs = iter(range(1, 10_000))


def new_database(server: object) -> str:
    """The URL of a fresh, empty database on the test server."""
    import psycopg

    name = f"team{next(_dbs)}_{os.getpid()}"
    with psycopg.connect(server.url(), autocommit=True) as conn:  # type: ignore[attr-defined]
        conn.execute(f"CREATE DATABASE {name}")
    return server.url(name)  # type: ignore[attr-defined]


@pytest.fixture
def pg_url(pg_server: object) -> str:  # noqa: F811 - the fixture above, used here
    """A fresh, empty database."""
    return new_database(pg_server)


@pytest.fixture(scope="package")
def pair(pg_server: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, dict[str, str]]]:  # noqa: F811
    """``(folder, url, ids)``: a store of every kind of run, and a database it was synced to with ``tracker sync``."""
    import tracker
    from tracker.team.postgres import sync

    store = tmp_path_factory.mktemp("team") / "store"
    ids = build_store(store)
    url = new_database(pg_server)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Small batches: the columns and figures of a writer are built over several commits.
        sync(tracker.open_store(store), url, batch=7)
    yield store, url, ids


class S3Server:
    """moto's S3 in server mode on 127.0.0.1, behind a middleware that keeps every request it answers."""

    def __init__(self) -> None:
        from moto.moto_server.threaded_moto_server import MotoRequestHandler
        from moto.server import DomainDispatcherApplication, create_backend_app
        from werkzeug.serving import make_server

        app = DomainDispatcherApplication(create_backend_app)
        self.requests: list[tuple[str, str, str]] = []
        #: The ``Authorization`` header of every request (which key signed it, for which region).
        self.authorizations: list[str] = []
        #: Seconds each uploaded part waits before it is answered: a slow link, so a kill lands mid-upload.
        self.part_delay = 0.0

        def counting(environ: dict[str, Any], start_response: Any) -> Any:
            req = (environ["REQUEST_METHOD"], environ.get("PATH_INFO", ""), environ.get("QUERY_STRING", ""))
            self.requests.append(req)
            self.authorizations.append(environ.get("HTTP_AUTHORIZATION", ""))
            if self.part_delay and req[0] == "PUT" and "partNumber=" in req[2]:
                time.sleep(self.part_delay)
            return app(environ, start_response)

        self.server = make_server("127.0.0.1", 0, counting, True, request_handler=MotoRequestHandler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def on(self, bucket: str) -> list[tuple[str, str, str]]:
        """The requests about ``bucket`` so far."""
        return [r for r in self.requests if r[1] == f"/{bucket}" or r[1].startswith(f"/{bucket}/")]

    def stop(self) -> None:
        self.server.shutdown()
        self.thread.join()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """An S3 server for the session (moto, installed by the test extra)."""
    pytest.importorskip("moto.server", reason="moto[server] is not installed (the test extra installs it)")
    pytest.importorskip("obstore", reason="obstore is not installed (the blobs extra)")
    server = S3Server()
    yield server
    server.stop()


_names = itertools.count(1)


class Bucket:
    """One bucket for one test: ``url`` for ``[team] blobs``, and direct access to its objects for checks."""

    def __init__(self, kind: str, url: str, server: S3Server | None, name: str, root: Path | None) -> None:
        self.kind, self.url, self.server, self.name, self.root = kind, url, server, name, root

    def store(self) -> Any:
        """An obstore store over the bucket's root (not the prefix), to look at or damage objects."""
        from obstore.store import from_url

        if self.kind == "s3":
            return from_url(f"s3://{self.name}", client_options={"allow_http": True})
        return from_url(f"file://{self.root}")

    def key(self, sha: str) -> str:
        return f"team/sha256/{sha[:2]}/{sha[2:]}"

    def keys(self) -> list[str]:
        import obstore

        return sorted(m["path"] for page in obstore.list(self.store()) for m in page)

    def read(self, sha: str) -> bytes:
        import obstore

        return bytes(obstore.get(self.store(), self.key(sha)).bytes())

    def put(self, sha: str, data: bytes) -> None:
        import obstore

        obstore.put(self.store(), self.key(sha), data)

    def delete(self, sha: str) -> None:
        import obstore

        obstore.delete(self.store(), self.key(sha))

    def requests(self) -> list[tuple[str, str, str]]:
        return self.server.on(self.name) if self.server is not None else []


@pytest.fixture(params=["s3", "file"])
def bucket(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Bucket:
    """A fresh bucket on the S3 server, or a folder through file://; the blob cache in the test's folder."""
    pytest.importorskip("obstore", reason="obstore is not installed (the blobs extra)")
    monkeypatch.setenv("TRACKER_BLOB_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TRACKER_TEAM_BLOBS", raising=False)
    if request.param == "s3":
        server = request.getfixturevalue("s3_server")
        name = f"lab-{next(_names)}"
        for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing-secret",
                     "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": server.endpoint}.items():
            monkeypatch.setenv(k, v)
        import boto3

        boto3.client("s3", endpoint_url=server.endpoint).create_bucket(Bucket=name)
        return Bucket("s3", f"s3://{name}/team", server, name, None)
    root = tmp_path / "bucket"
    root.mkdir()
    return Bucket("file", f"file://{root}/team", None, "", root)


@pytest.fixture(scope="package")
def team_sweep(pg_server: object, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:  # noqa: F811
    """``(store, url, sweep_id)``: a bayes sweep of 6 trials created with ``tracker sweep create --storage URL``
    (its study in the database), its trials' runs synced to the same database."""
    pytest.importorskip("optuna")
    pytest.importorskip("yaml")
    import subprocess
    import sys

    import tracker
    from tracker.team.postgres import sync

    folder = tmp_path_factory.mktemp("team-sweep")
    store = folder / "store"
    url = new_database(pg_server)
    (folder / "sweep.yaml").write_text("name: lr search\nmethod: bayes\nmetric: {name: loss}\nparameters:\n"
                                       "  lr: {distribution: log_uniform_values, min: 0.0001, max: 0.1}\n"
                                       "  layers: {values: [1, 2, 4]}\n")
    env = child_environ()
    made = subprocess.run([sys.executable, "-m", "tracker", "--store", str(store), "sweep", "create",
                           str(folder / "sweep.yaml"), "--project", "sweepy", "--seed", "1", "--storage", url],
                          capture_output=True, text=True, env=env, cwd=folder, timeout=120)
    assert made.returncode == 0, made.stderr
    sweep_id = made.stdout.strip()

    def train() -> None:
        run = tracker.init()
        lr, layers = run.config["lr"], run.config["layers"]
        for step in range(3):
            tracker.log({"loss": (lr - 0.01) ** 2 * 1e4 + layers * 0.1 + 1.0 / (step + 1)})

    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("TRACKER_RUN_ID", raising=False)
        mp.delenv("TRACKER_SWEEP_ID", raising=False)
        tracker.agent(sweep_id, function=train, count=6, store=store, storage=url)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sync(tracker.open_store(store), url)
    yield store, url, sweep_id
