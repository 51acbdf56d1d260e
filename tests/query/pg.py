"""A real PostgreSQL server for the tests, run by an unprivileged user in a temporary folder."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

PASSWORD = "s3cret-pw"
USER = "tracker"


def bindir() -> Path | None:
    """The folder of initdb and pg_ctl (tests/sysdeps.py decides), or ``None``."""
    from ..sysdeps import postgres_bindir

    return postgres_bindir()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``initdb`` + ``pg_ctl start`` in a fresh folder; as root, as the ``postgres`` (or ``nobody``) user."""

    def __init__(self, bins: Path) -> None:
        self.bins = bins
        self.root = Path(tempfile.mkdtemp(prefix="tracker-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.prefix: list[str] = []
        if os.geteuid() == 0:
            try:
                user = pwd.getpwnam("postgres")
            except KeyError:
                user = pwd.getpwnam("nobody")
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self.prefix = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups",
                           "--reset-env", "--"] if shutil.which("setpriv") else ["runuser", "-u", user.pw_name, "--"]
        os.chmod(self.root, 0o755)
        pwfile = self.root / "pw"
        pwfile.write_text(PASSWORD + "\n")
        if self.prefix:
            os.chown(pwfile, *self._ids())
        self._run("initdb", "-D", str(self.data), "-U", USER, f"--pwfile={pwfile}", "--auth-host=scram-sha-256",
                  "--auth-local=trust", "-E", "UTF8", "--no-sync")
        opts = (f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=50")
        self._run("pg_ctl", "-D", str(self.data), "-o", opts, "-l", str(self.root / "log"), "-w", "-t", "60", "start")

    def _ids(self) -> tuple[int, int]:
        st = os.stat(self.root)
        return st.st_uid, st.st_gid

    def _run(self, tool: str, *args: str) -> None:
        proc = subprocess.run([*self.prefix, str(self.bins / tool), *args], capture_output=True, text=True,
                              timeout=120, cwd=str(self.root), env={**os.environ, "LC_ALL": "C"})
        if proc.returncode != 0:
            log = (self.root / "log").read_text() if (self.root / "log").exists() else ""
            raise RuntimeError(f"{tool} failed: {proc.stderr}\n{proc.stdout}\n{log}")

    def url(self, db: str = "postgres", password: str | None = PASSWORD) -> str:
        auth = f"{USER}:{password}" if password is not None else USER
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{db}"

    def restart(self) -> None:
        """``pg_ctl restart -m fast``: every session ends, and the server is back on the same port."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-l", str(self.root / "log"), "-w", "-t", "60",
                  "restart")

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)
