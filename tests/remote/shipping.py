"""Helpers of the shipping tests: a client folder with its tracker.toml, children that log, the follower's pid."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tracker.write.stream import complete_end, shipped_files

from .conftest import ServerProcess


class Client:
    """A machine that logs to ``server``: its folder (tracker.toml, store) and its children's environment.

    :param key: the key in ``TRACKER_API_KEY`` (``None``: none in the environment).
    :param url: the team URL (default: the server's).
    """

    def __init__(self, folder: Path, server: ServerProcess, key: str | None, *, url: str | None = None,
                 finish_timeout: float = 20.0, extra: dict[str, str] | None = None) -> None:
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.server = server
        self.key = key
        self.store = folder / ".tracker"
        (folder / "tracker.toml").write_text(f'[team]\nurl = "{url or server.url}"\n'
                                             f"finish_timeout = {finish_timeout}\n")
        self.env = server.env(key)
        self.env.pop("TRACKER_URL", None)  # the URL comes from tracker.toml, as on a lab's machine
        self.env.update(TRACKER_STORE=str(self.store), TRACKER_FOLLOWER_LINGER="3", TRACKER_FOLLOWER_BACKOFF_MAX="1",
                        XDG_CONFIG_HOME=str(folder / "config"), **(extra or {}))
        self.children: list[subprocess.Popen] = []

    def python(self, code: str, *args: str) -> subprocess.Popen:
        """A child running ``code`` in the client's folder, stdout and stderr piped as text."""
        proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], cwd=self.folder, env=self.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.children.append(proc)
        return proc

    def tracker(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        """``python -m tracker *args`` in the client's folder."""
        return subprocess.run([sys.executable, "-m", "tracker", *args], cwd=self.folder, env=self.env,
                              capture_output=True, text=True, timeout=timeout)

    def follower_state(self) -> dict[str, Any]:
        try:
            return json.loads((self.store / "team" / "follower.json").read_text())
        except (OSError, ValueError):
            return {}

    def follower_pid(self, timeout: float = 30.0) -> int:
        """The pid of the store's running follower (waits for its status file)."""
        wait(lambda: self.follower_state().get("pid") and not self.follower_state().get("stopped_at"), timeout,
             "the follower to start")
        return int(self.follower_state()["pid"])

    def stop_follower(self) -> None:
        """End the store's follower (started by this client's runs) if it still runs."""
        pid = self.follower_state().get("pid")
        if isinstance(pid, int) and not self.follower_state().get("stopped_at"):
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                return
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and alive(pid):
                time.sleep(0.05)

    def close(self) -> None:
        for proc in self.children:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.stop_follower()


def new_key(server: ServerProcess, name: str, scope: str = "write", projects: tuple[str, ...] | list[str] = ()) -> str:
    """A key made over HTTPS with the server's admin key (``POST /api/v1/keys``: no CLI start per key)."""
    with server.client(server.admin_key) as http:
        r = http.post("/api/v1/keys", json={"name": name, "scope": scope, "projects": list(projects)})
    assert r.status_code == 201, r.text
    return r.json()["key"]


def revoke(server: ServerProcess, key: str) -> None:
    """Revoke ``key`` over HTTPS with the admin key."""
    with server.client(server.admin_key) as http:
        r = http.delete(f"/api/v1/keys/{key.split('_')[1]}")
    assert r.status_code == 200, r.text


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait(cond: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll ``cond`` until it is true; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = cond()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g}s waiting for {what}")
        time.sleep(0.05)


def local_lines(store: Path, rid: str) -> dict[str, bytes]:
    """The complete lines of each shipped file of run ``rid`` in a folder store."""
    out = {}
    for name, path in shipped_files(store / "runs" / rid):
        out[name] = path.read_bytes()[:complete_end(path)]
    return out


def server_files(store: Path, rid: str) -> dict[str, bytes]:
    """The same files in the server's store."""
    out = {}
    for name, path in shipped_files(store / "runs" / rid):
        out[name] = path.read_bytes()
    return out


def same_on_server(client_store: Path, server_store: Path, rid: str) -> bool:
    """Whether the server holds exactly the complete lines the client wrote, file by file."""
    mine = local_lines(client_store, rid)
    return bool(mine) and server_files(server_store, rid) == mine
