"""Connections to the team database that never wait for ever: a deadline on every round trip, keepalives while idle.

A database behind a link that silently drops packets (a VPN, a NAT that
forgot the connection, a failover) sends no error: a query sent into it
waits for an answer that never comes, and the server's ``statement_timeout``
never sees it (the query was lost on the way). So each connection made here
carries its own client-side deadline (``[team] timeout``, 30 s by default):

- connecting gives up after ``timeout`` seconds (libpq's ``connect_timeout``);
- every round trip on the connection (a statement and its rows, a commit, a
  part of a COPY) that has no answer within ``timeout`` seconds closes the
  connection and raises :class:`psycopg.OperationalError` ("no answer from
  the team database within N s"), which each caller already treats as a lost
  connection (the follower reconnects, the dashboard answers 503);
- TCP keepalives probe an idle connection (idle ``timeout / 2``, then three
  probes ``timeout / 6`` apart) and ``tcp_user_timeout`` ends one whose sent
  data goes unacknowledged for ``timeout``: a dead link is noticed within
  about ``timeout`` seconds even while nothing is asked.

A connection given up on may still live on the server (the link dropped the
client's packets, not the server's session): there it may hold a transaction
open, and with it the row locks a new connection needs. Each process
remembers the backends it gave up on and ends them
(``pg_terminate_backend``) from its next connection; a connection opened with
``exclusive=NAME`` (the store's follower, of which one runs per store) also
ends every other session of that name, left by a follower that was killed.
"""

from __future__ import annotations

import math
import secrets
import threading
from typing import Any

#: ``[team] timeout``'s default: seconds a connection attempt or a round trip may take.
DEFAULT_TIMEOUT = 30.0
#: The ``application_name`` of every connection starts with this.
APP = "tracker"

_lock = threading.Lock()
#: ``(application_name, backend pid)`` of the connections this process gave up on, to end on the server.
_abandoned: set[tuple[str, int]] = set()
_classes: dict[str, type] = {}


def team_timeout(config: Any = None) -> float:
    """``[team] timeout`` of ``config`` (default: the tracker.toml that applies), in seconds."""
    if config is None:
        from tracker.core.config import load_config

        try:
            config = load_config()
        except Exception:  # noqa: BLE001 - a broken tracker.toml is reported by whoever reads it for itself
            return DEFAULT_TIMEOUT
    value = getattr(config, "team_timeout", None)
    return float(value) if isinstance(value, (int, float)) and value > 0 else DEFAULT_TIMEOUT


def libpq_params(timeout: float) -> dict[str, Any]:
    """What libpq is given for ``timeout``: the connection attempt's limit, TCP keepalives, ``tcp_user_timeout``."""
    return {"connect_timeout": max(2, math.ceil(timeout)), "keepalives": 1,
            "keepalives_idle": max(1, int(timeout / 2)), "keepalives_interval": max(1, int(timeout / 6)),
            "keepalives_count": 3, "tcp_user_timeout": max(1000, int(timeout * 1000))}


def connection_class() -> type:
    """``psycopg.Connection`` whose every wait on the server has the connection's deadline (made once)."""
    cls = _classes.get("sync")
    if cls is not None:
        return cls
    import inspect

    import psycopg
    from psycopg import errors

    if not hasattr(errors, "_WaitTimeout") or "interval" not in inspect.signature(psycopg.Connection.wait).parameters:
        from tracker.core.errors import TrackerError

        raise TrackerError(f"the team store needs psycopg 3.2 or newer (its waits with a deadline), found "
                           f"{psycopg.__version__}: pip install \"tracker-core[team]\"")

    class DeadlineConnection(psycopg.Connection):  # type: ignore[type-arg,misc]
        """A psycopg connection that gives up on a round trip after ``deadline`` seconds (and closes)."""

        deadline: float = DEFAULT_TIMEOUT
        app_name: str = APP

        def wait(self, gen: Any, interval: float = 0.1, timeout: float | None = None) -> Any:
            if timeout is not None:  # psycopg's own timed waits (notifies, cancel) keep their limit
                return super().wait(gen, interval=interval, timeout=timeout)
            try:
                return super().wait(gen, interval=interval, timeout=self.deadline)
            except errors._WaitTimeout:
                self._give_up()
                raise psycopg.OperationalError(
                    f"no answer from the team database within {self.deadline:g} s ([team] timeout): the link "
                    "may be down; the connection was closed") from None
            except psycopg.OperationalError:
                if self.broken:
                    self._give_up()
                raise

        def _give_up(self) -> None:
            pid = getattr(self, "_backend_pid", None)
            if pid:
                with _lock:
                    _abandoned.add((self.app_name, pid))
            try:
                self.pgconn.finish()  # the socket is closed now; the server's session is ended later
            except Exception:  # noqa: BLE001 - finishing a connection that is already gone
                pass

    _classes["sync"] = DeadlineConnection
    return DeadlineConnection


def connect(url: str, *, timeout: float = DEFAULT_TIMEOUT, autocommit: bool = False,
            exclusive: str | None = None) -> Any:
    """A psycopg connection to ``url`` with a deadline of ``timeout`` seconds on connecting and on each round trip.

    :param exclusive: a name only one live connection should have (the store's follower): other sessions of
        that name on the server are ended, as connections this process gave up on are.
    :raises psycopg.Error: as :func:`psycopg.connect` (an unreachable server, a wrong password...).
    """
    cls = connection_class()
    name = exclusive or f"{APP}-{secrets.token_hex(4)}"
    conn = cls.connect(url, autocommit=autocommit, application_name=name, **libpq_params(timeout))
    conn.deadline = float(timeout)
    conn.app_name = name
    conn._backend_pid = conn.info.backend_pid
    _end_ghosts(conn, exclusive)
    return conn


def _end_ghosts(conn: Any, exclusive: str | None) -> None:
    """End on the server the sessions this process gave up on (and, ``exclusive``, the others of that name)."""
    import psycopg

    with _lock:
        ghosts = sorted(_abandoned)
    if not ghosts and exclusive is None:
        return
    pids = [pid for _, pid in ghosts]
    names = [name for name, _ in ghosts]
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT pg_terminate_backend(a.pid) FROM pg_stat_activity a "
                        "WHERE a.pid <> pg_backend_pid() AND ("
                        "(a.pid, a.application_name) IN (SELECT * FROM unnest(%s::int[], %s::text[])) "
                        "OR a.application_name = %s)", (pids, names, exclusive))
        if not conn.autocommit:
            conn.commit()
    except psycopg.Error:
        if conn.broken or conn.closed:
            raise
        if not conn.autocommit:
            conn.rollback()  # a role that may not end them: they end when their link does
        return
    with _lock:
        _abandoned.difference_update(ghosts)


__all__ = ["DEFAULT_TIMEOUT", "connect", "connection_class", "libpq_params", "team_timeout"]
