"""A real ``tracker server`` process for the remote tests, one per test module.

Fixtures
--------
``server`` (module scope): a :class:`ServerProcess` serving a fresh folder store on a free
127.0.0.1 port, started with ``python -m tracker --store STORE server --port PORT``, with an
admin key made by the real CLI before it starts.

``server_factory`` (module scope): ``server_factory(*args, store=None, env=None, scheme="http")``
starts another server (extra command-line arguments such as ``--tls-cert``, a ``postgresql://`` store
given as ``store``); each is stopped at the end of the module.

:class:`ServerProcess` (stable interface)
-----------------------------------------
- ``url``: ``http://127.0.0.1:PORT`` (``https://`` with ``scheme="https"``); ``port``; ``store``
  (a folder ``Path``, or the ``postgresql://`` URL given); ``admin_key``; ``log`` (the ``Path`` of the
  server's stdout and stderr); ``proc`` (the ``subprocess.Popen``, ``None`` while stopped).
- ``make_key(name, scope="write", projects=(), expires=None) -> str``: a new key, made with
  ``tracker keys create`` on the server's store (the real CLI; the key is the last stdout line).
- ``cli(*args, check=True) -> subprocess.CompletedProcess``: ``python -m tracker --store STORE *args``.
- ``headers(key)``: ``{"Authorization": "Bearer <key>"}``.
- ``client(key=None, source=None, **kw) -> httpx.Client``: base URL set, the key's header, and
  ``source`` a local address to connect from (``"127.0.0.7"``: another client address on the loopback
  network, for the per-address failure limit); ``kw`` goes to ``httpx.Client`` (e.g. ``verify=``).
- ``env(key=None) -> dict``: a child's environment (no ``TRACKER_*`` but the suite's defaults) with
  ``TRACKER_URL`` and ``TRACKER_API_KEY`` set.
- ``stop()``, ``start()``, ``restart()``: stop the process (SIGTERM, then SIGKILL after 10 s) and start
  it again on the same port and store; ``kill()`` sends SIGKILL.
- ``text()``: what the server printed so far.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..childenv import child_environ

pytest.importorskip("httpx", reason="the remote tests talk HTTP with httpx")
pytest.importorskip("uvicorn", reason="the ui extra (uvicorn) is not installed")


def free_port() -> int:
    """A TCP port nothing listens on now, on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tracker_cmd(store: Any, *args: str) -> list[str]:
    """``python -m tracker --store STORE *args`` with the interpreter running the tests."""
    return [sys.executable, "-m", "tracker", "--store", str(store), *args]


class ServerProcess:
    """A ``tracker server`` child process (see the module's docstring)."""

    def __init__(self, store: Any, folder: Path, *args: str, env: dict[str, str] | None = None,
                 scheme: str = "http", verify: Any = True) -> None:
        self.store = store
        self.folder = folder
        self.args = args
        self.extra_env = env or {}
        self.scheme = scheme
        if isinstance(verify, (str, os.PathLike)):  # a CA bundle: httpx takes it as an SSL context
            import ssl

            verify = ssl.create_default_context(cafile=str(verify))
        self.verify = verify
        self.port = free_port()
        self.url = f"{scheme}://127.0.0.1:{self.port}"
        self.log = folder / f"server-{self.port}.log"
        self.proc: subprocess.Popen | None = None
        self.admin_key = self.make_key("admin", "admin")

    # --- keys and the CLI

    def child_env(self) -> dict[str, str]:
        return {**child_environ(), **self.extra_env}

    def cli(self, *args: str, check: bool = True, env: dict[str, str] | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess:
        """``python -m tracker --store STORE *args``, its output captured as text."""
        proc = subprocess.run(tracker_cmd(self.store, *args), capture_output=True, text=True, timeout=timeout,
                              env=env or self.child_env(), cwd=self.folder)
        if check and proc.returncode != 0:
            raise AssertionError(f"tracker {' '.join(args)} failed ({proc.returncode}): {proc.stderr}{proc.stdout}")
        return proc

    def make_key(self, name: str, scope: str = "write", projects: tuple[str, ...] | list[str] = (),
                 expires: str | None = None) -> str:
        """A new key made with the real ``tracker keys create`` on the server's store."""
        args = ["keys", "create", name, "--scope", scope]
        for p in projects:
            args += ["--project", p]
        if expires is not None:
            args += ["--expires", expires]
        key = self.cli(*args).stdout.strip().splitlines()[-1]
        assert key.startswith("trk_"), key
        return key

    @staticmethod
    def headers(key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    def client(self, key: str | None = None, source: str | None = None, **kw: Any) -> Any:
        """An ``httpx.Client`` on the server (see the module's docstring)."""
        import httpx

        transport = httpx.HTTPTransport(local_address=source, verify=kw.pop("verify", self.verify)) \
            if source else None
        headers = {**(self.headers(key) if key else {}), **kw.pop("headers", {})}
        options: dict[str, Any] = {"base_url": self.url, "headers": headers, "timeout": kw.pop("timeout", 30)}
        if transport is not None:
            options["transport"] = transport
        else:
            options["verify"] = kw.pop("verify", self.verify)
        return httpx.Client(**options, **kw)

    def env(self, key: str | None = None) -> dict[str, str]:
        """A child's environment pointing at this server with ``key``."""
        out = {**child_environ(), "TRACKER_URL": self.url}
        if key:
            out["TRACKER_API_KEY"] = key
        return out

    # --- the process

    def start(self, timeout: float = 30.0) -> ServerProcess:
        """Start the server and wait until it answers."""
        assert self.proc is None, "already started"
        out = open(self.log, "ab")  # noqa: SIM115 - the child writes to it until it stops
        self.proc = subprocess.Popen(
            tracker_cmd(self.store, "server", "--port", str(self.port), *self.args), stdout=out,
            stderr=subprocess.STDOUT, env=self.child_env(), cwd=self.folder, start_new_session=True)
        out.close()
        import httpx

        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise AssertionError(f"tracker server exited with {self.proc.returncode}: {self.text()}")
            try:
                r = httpx.get(f"{self.url}/api/v1/openapi.json", timeout=2, verify=self.verify)
                if r.status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                self.kill()
                raise AssertionError(f"tracker server did not answer within {timeout} s: {self.text()}")
            time.sleep(0.1)

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM, then SIGKILL if it has not stopped within ``timeout`` seconds."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def kill(self) -> None:
        """SIGKILL."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc = None

    def restart(self) -> ServerProcess:
        """Stop, then start again on the same port and store."""
        self.stop()
        return self.start()

    def text(self) -> str:
        """What the server printed so far."""
        try:
            return self.log.read_text(errors="replace")
        except FileNotFoundError:
            return ""


@pytest.fixture(scope="module")
def server_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Start servers of the module's own (see the module's docstring); all stopped at its end."""
    started: list[ServerProcess] = []

    def make(*args: str, store: Any = None, env: dict[str, str] | None = None, scheme: str = "http",
             verify: Any = True) -> ServerProcess:
        folder = tmp_path_factory.mktemp("server")
        proc = ServerProcess(store if store is not None else folder / "store", folder, *args, env=env,
                             scheme=scheme, verify=verify)
        started.append(proc)
        return proc.start()

    yield make
    for proc in started:
        proc.stop()


@pytest.fixture(scope="module")
def server(server_factory: Any) -> ServerProcess:
    """One ``tracker server`` over a fresh folder store for the module (see the module's docstring)."""
    return server_factory()


__all__ = ["ServerProcess", "free_port", "tracker_cmd"]
