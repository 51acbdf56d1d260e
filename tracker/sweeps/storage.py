"""Where a sweep's study is kept: its folder in the store, a journal file there, or an Optuna RDB database.

A sweep lives in ``<store>/sweeps/<id>/``: ``sweep.json`` says where its
study is, by default Optuna's ``JournalStorage`` over a journal file beside
it (appends under a lock file, safe on a shared file system, as durable as
the store's own lines), else ``--storage URL``: Optuna's RDB storage, the team
database's PostgreSQL by default when ``[team] url`` is set, reached through
the team store's connections with their deadline. Errors of reading a
storage are one line, its password masked. Optuna is imported here only,
when a sweep is used.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tracker.core.errors import TrackerError

#: The folder of the store that holds the sweeps, one folder each.
SWEEPS = "sweeps"
#: A sweep id (and the names of the folders under ``<store>/sweeps``).
SWEEP_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


def optuna() -> Any:
    """The ``optuna`` module, quiet; a TrackerError naming the extra when it is not installed."""
    try:
        import optuna as _optuna
    except ImportError:
        raise TrackerError('sweeps need Optuna: pip install "tracker-core[sweeps]"') from None
    _optuna.logging.set_verbosity(_optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=_optuna.exceptions.ExperimentalWarning)
    return _optuna


def check_sweep_id(sweep_id: str) -> str:
    """A sweep id; W&B's ``entity/project/ID`` form is taken too (its last part is the id).

    :raises TrackerError: anything but ``[A-Za-z0-9_-]{1,64}``.
    """
    if isinstance(sweep_id, str) and "/" in sweep_id:
        sweep_id = sweep_id.rstrip("/").rsplit("/", 1)[-1]
    if not isinstance(sweep_id, str) or not SWEEP_ID.fullmatch(sweep_id):
        raise TrackerError(f"not a sweep id: {sweep_id!r} (expected letters, digits, '_' or '-', at most 64)")
    return sweep_id


def redact(url: str | None) -> str | None:
    """A storage URL with its password replaced by ``***``, fit to print."""
    if url is None:
        return None
    return re.sub(r"(://[^:/@]+:)[^@/]*@", r"\1***@", url)


def without_password(url: str | None) -> str | None:
    """A storage URL without its password: what ``sweep.json`` keeps (libpq finds the password in
    ``PGPASSWORD`` or ``~/.pgpass``, or an agent is given ``--storage URL``)."""
    if url is None:
        return None
    return re.sub(r"(://[^:/@]+):[^@/]*@", r"\1@", url)


def sweeps_dir(root: Path) -> Path:
    """``<store>/sweeps``."""
    return Path(root) / SWEEPS


def is_url(storage: str | None) -> bool:
    """Whether ``storage`` is a database URL (an RDB storage) rather than a journal file's path."""
    return storage is not None and "://" in storage


def open_storage(url: str | None, folder: Path | None) -> Any:
    """Optuna's storage of a sweep: the database at URL ``url``, else the journal ``url`` or ``folder/journal.log``.

    :raises TrackerError: neither a URL nor a folder, or a database that cannot be opened (one line).
    """
    o = optuna()
    if is_url(url):
        return rdb_storage(url)
    if folder is None:
        raise TrackerError("a sweep without a storage URL lives in a store folder: give the store")
    path = Path(url) if url else folder / "journal.log"
    return o.storages.JournalStorage(_journal_backend(o, str(path)))


#: Optuna's RDB storages opened by this process, by URL: one engine (and pool of connections) per database.
_rdb: dict[str, Any] = {}


def rdb_storage(url: str, *, create: bool = True) -> Any:
    """Optuna's RDB storage at ``url``, whose connections have the team's deadline and keepalives.

    :param create: make Optuna's tables when they are missing (``False``: a reader, that only looks).
    """
    storage = _rdb.get(url)
    if storage is not None:
        return storage
    o = optuna()
    try:
        storage = o.storages.RDBStorage(_driver_url(url), engine_kwargs=_engine_kwargs(url, ping=create),
                                        skip_table_creation=not create)
    except Exception as exc:  # noqa: BLE001 - a driver's or server's error, as one line
        raise TrackerError(f"cannot open the sweep storage {redact(url)}: {type(exc).__name__}: "
                           f"{_first_line(exc)}") from None
    _rdb[url] = storage
    return storage


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else ""


@contextlib.contextmanager
def storage_errors(url: str | None) -> Iterator[None]:
    """Errors of reading the sweep storage at ``url`` as one line, its password masked: a lost or unreachable
    database is :class:`~tracker.core.errors.StoreUnavailable` (the dashboard's 503), anything else a TrackerError."""
    from tracker.core.errors import StoreUnavailable
    from tracker.core.urls import redact_url, url_secrets

    try:
        yield
    except TrackerError:
        raise
    except Exception as exc:  # noqa: BLE001 - SQLAlchemy's or the driver's error, as one line
        # Optuna wraps the driver's error (StorageInternalError "... during the commit"): the cause says what it was.
        chain, seen = [], exc
        while seen is not None and len(chain) < 8:
            chain.append(seen)
            seen = seen.__cause__ or seen.__context__
        lost = next((e for e in chain if {c.__name__ for c in type(e).__mro__}
                     & {"OperationalError", "InterfaceError", "DisconnectionError", "TimeoutError"}), None)
        text = _first_line(lost if lost is not None else exc)
        for secret in url_secrets(url or ""):
            text = text.replace(secret, "***")
        if lost is not None:
            raise StoreUnavailable(f"the sweep storage {redact_url(url)} cannot be reached: {text}") from None
        raise TrackerError(f"reading the sweep storage {redact_url(url)} failed: {type(exc).__name__}: "
                           f"{text}") from None


def _libpq_url(url: str) -> str | None:
    """The ``postgresql://`` URL libpq takes for a SQLAlchemy PostgreSQL URL through psycopg 3, else ``None``."""
    m = re.match(r"^(?:postgres|postgresql)(?:\+psycopg)?://", url)
    return "postgresql://" + url[m.end():] if m else None


def _engine_kwargs(url: str, *, ping: bool = True) -> dict[str, Any]:
    """SQLAlchemy's engine options for the sweep storage at ``url``.

    A PostgreSQL database (the team's) is reached through the team store's connections (psycopg 3):
    ``[team] timeout`` bounds each connection attempt and each round trip, and TCP keepalives probe idle
    connections (:mod:`tracker.team.connection`), so an agent or a dashboard never waits for ever on a
    link that dropped. With psycopg2 instead, libpq's own limits apply (connecting, keepalives).

    :param ping: test a pooled connection before each use (an agent rides over a server restart); a
        reader (the dashboard) does not, so that a request over a dead link fails within one timeout
        (a connection that failed is dropped from the pool, and the next request connects again).
    """
    kw: dict[str, Any] = {"pool_pre_ping": ping}
    raw = _libpq_url(url)
    if raw is None:
        return kw
    from tracker.host import get_host
    from tracker.team.connection import connect, libpq_params, team_timeout

    timeout = team_timeout(get_host().config)
    if _driver_url(url).startswith("postgresql+psycopg://"):
        kw["creator"] = lambda: connect(raw, timeout=timeout)
    else:
        kw["connect_args"] = libpq_params(timeout)
    return kw


def default_storage(root: Path | None, sweep_id: str | None, config: Any) -> str | None:
    """Where a sweep is when no ``--storage`` was given: its ``sweep.json`` in the store says; without one
    (a new sweep, or one made on another machine), the team database of ``[team] url`` if one is set."""
    from tracker.core.urls import team_database_url

    if root is not None and sweep_id is not None and (sweeps_dir(root) / check_sweep_id(sweep_id) /
                                                       "sweep.json").is_file():
        return None
    return team_database_url(config)


def _journal_backend(o: Any, path: str) -> Any:
    """Optuna's ``JournalFileBackend`` whose appends follow the store's durability.

    Optuna fsyncs every journal line; a trial takes four, which is most of what
    an agent adds to a trial. With ``durability = "process"`` (the default, as
    for the runs' own lines) a line is one ``os.write`` under the journal's lock
    and survives a kill -9 of any agent; ``"fsync"`` keeps Optuna's fsync.
    """
    from optuna.storages.journal import JournalFileBackend, JournalFileSymlinkLock

    from tracker.host import get_host

    fsync = get_host().config.fsync

    class Backend(JournalFileBackend):
        def __init__(self) -> None:
            self._tracker_lock = JournalFileSymlinkLock(path)  # Optuna's default lock, kept to take it here
            super().__init__(path, self._tracker_lock)

        def append_logs(self, logs: list[dict[str, Any]]) -> None:
            if fsync:
                super().append_logs(logs)
                return
            data = ("\n".join(json.dumps(log, separators=(",", ":")) for log in logs) + "\n").encode()
            self._tracker_lock.acquire()
            try:
                fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    os.write(fd, data)  # one write of whole lines, appended under the lock
                finally:
                    os.close(fd)
            finally:
                self._tracker_lock.release()

    return Backend()


def _driver_url(url: str) -> str:
    """A PostgreSQL URL as SQLAlchemy takes it: psycopg 3 (the team extra's driver), else psycopg2."""
    import importlib.util

    for prefix in ("postgres://", "postgresql://"):
        if url.startswith(prefix):
            rest = url[len(prefix):]
            if importlib.util.find_spec("psycopg") is not None:
                return "postgresql+psycopg://" + rest
            return "postgresql://" + rest
    return url


def has_optuna_tables(url: str) -> bool:
    """Whether Optuna's tables are in the database at ``url`` (looked at without making them)."""
    import sqlalchemy

    with storage_errors(url):
        engine = sqlalchemy.create_engine(_driver_url(url), **_engine_kwargs(url, ping=False))
        try:
            return bool(sqlalchemy.inspect(engine).has_table("study_user_attributes"))
        finally:
            engine.dispose()


def existing_rdb_storage(url: str) -> Any:
    """Optuna's RDB storage at ``url`` to read, or ``None`` when the database holds no Optuna tables (no sweep
    ever used it): nothing is created in it."""
    storage = _rdb.get(url)
    if storage is None:
        if not has_optuna_tables(url):
            return None
        storage = rdb_storage(url, create=False)
    return storage


__all__ = ["SWEEPS", "SWEEP_ID", "check_sweep_id", "default_storage", "existing_rdb_storage", "has_optuna_tables",
           "is_url", "open_storage", "optuna", "rdb_storage", "redact", "storage_errors", "sweeps_dir",
           "without_password"]
