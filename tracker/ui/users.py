"""The users file of ``tracker ui --auth users.toml``: user names and scrypt hashes, read, checked and written.

``tracker ui passwd USER --file users.toml`` adds a user or changes a password;
the file keeps each password's :mod:`hashlib` scrypt hash with its salt and
parameters, never the password. Imports tracker.core only (no Starlette).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import sys
from pathlib import Path
from typing import Any

from tracker.core.errors import TrackerError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

#: scrypt's cost parameters for new hashes (OWASP's n=2**15, r=8, p=3: 32 MiB, a few tenths of a second);
#: each hash keeps its own, so raising them later leaves older entries valid.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**15, 8, 3
SALT_BYTES, HASH_BYTES = 16, 32
MIN_PASSWORD = 8
USER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
_HEX = re.compile(r"[0-9a-f]+")

def hash_password(password: str, *, n: int = SCRYPT_N, r: int = SCRYPT_R, p: int = SCRYPT_P,
                  salt: bytes | None = None) -> dict[str, Any]:
    """A new scrypt entry for ``password``: ``{"n", "r", "p", "salt", "hash"}`` (salt and hash in hex)."""
    salt = secrets.token_bytes(SALT_BYTES) if salt is None else salt
    digest = _scrypt(password, salt, n, r, p, HASH_BYTES)
    return {"n": n, "r": r, "p": p, "salt": salt.hex(), "hash": digest.hex()}


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int, length: int) -> bytes:
    return hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=r, p=p, dklen=length,
                          maxmem=2 * 128 * r * n + 1024 * 1024)


def verify_password(password: str, entry: dict[str, Any]) -> bool:
    """Whether ``password`` hashes to ``entry["hash"]`` with the entry's salt and parameters (constant time)."""
    want = bytes.fromhex(entry["hash"])
    got = _scrypt(password, bytes.fromhex(entry["salt"]), entry["n"], entry["r"], entry["p"], len(want))
    return hmac.compare_digest(got, want)


def check_user_name(user: str) -> str:
    """``user`` when it is a valid user name, else a :class:`TrackerError` saying what one is."""
    if not USER_NAME.fullmatch(user):
        raise TrackerError(f"user name {user[:80]!r}: expected 1 to 64 characters from A-Z a-z 0-9 . _ @ -, "
                           "starting with a letter or digit")
    return user


def read_users(path: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """The users of a users file: ``{name: {"n", "r", "p", "salt", "hash"}}``.

    :raises TrackerError: one line naming the file and what is wrong in it (its
        TOML, a user name, a missing or bad key), or that it does not exist.
    """
    path = Path(path)
    try:
        with open(path, "rb") as f:
            raw = tomllib.load(f)
    except FileNotFoundError:
        raise TrackerError(f"no users file {path}: create it with `tracker ui passwd USER --file {path}`") from None
    except IsADirectoryError:
        raise TrackerError(f"{path} is a folder, expected a users file (tracker ui passwd USER --file ...)") from None
    except OSError as exc:
        raise TrackerError(f"cannot read the users file {path}: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TrackerError(f"{path}: not valid TOML: {exc}") from None
    extra = sorted(set(raw) - {"users"})
    if extra:
        raise TrackerError(f"{path}: unknown key {extra[0]!r}: expected only [users.NAME] tables")
    table = raw.get("users", {})
    if not isinstance(table, dict):
        raise TrackerError(f"{path}: users: expected a table of [users.NAME] tables, given {type(table).__name__}")
    users = {}
    for name, entry in table.items():
        where = f"{path}: users.{name}"
        if not USER_NAME.fullmatch(name):
            raise TrackerError(f"{where}: expected a user name of 1 to 64 characters from A-Z a-z 0-9 . _ @ -")
        if not isinstance(entry, dict):
            raise TrackerError(f"{where}: expected a table with n, r, p, salt and hash, given {type(entry).__name__}")
        unknown = sorted(set(entry) - {"n", "r", "p", "salt", "hash"})
        if unknown:
            raise TrackerError(f"{where}.{unknown[0]}: unknown key; expected n, r, p, salt and hash")
        for key in ("n", "r", "p"):
            value = entry.get(key)
            if value is None:
                raise TrackerError(f"{where}: missing key {key!r} (scrypt's parameters n, r and p)")
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise TrackerError(f"{where}.{key}: expected a positive integer, given {value!r}")
        if entry["n"] < 2 or entry["n"] & (entry["n"] - 1) or entry["n"] > 2**24 or entry["r"] * entry["p"] >= 2**30:
            raise TrackerError(f"{where}: n must be a power of two from 2 to 2**24 (and r*p < 2**30), given "
                               f"n={entry['n']}, r={entry['r']}, p={entry['p']}")
        for key, lo in (("salt", 8), ("hash", 16)):
            value = entry.get(key)
            if value is None:
                raise TrackerError(f"{where}: missing key {key!r}")
            if not isinstance(value, str) or not _HEX.fullmatch(value) or len(value) % 2 or len(value) < 2 * lo:
                raise TrackerError(f"{where}.{key}: expected at least {lo} bytes as lowercase hex digits")
        users[name] = dict(entry)
    return users


def write_users(path: str | os.PathLike, users: dict[str, dict[str, Any]]) -> None:
    """Write ``users`` to ``path`` (readable by its owner only), replacing it whole: never half-written."""
    path = Path(path)
    lines = ["# Users of `tracker ui --auth FILE`: scrypt hashes written by `tracker ui passwd USER --file FILE`.",
             "# n, r, p: scrypt's parameters; salt and hash: hex. Delete a [users.NAME] table to remove a user.", ""]
    for name in sorted(users):
        e = users[name]
        lines += [f'[users."{name}"]', f"n = {int(e['n'])}", f"r = {int(e['r'])}", f"p = {int(e['p'])}",
                  f'salt = "{e["salt"]}"', f'hash = "{e["hash"]}"', ""]
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def set_password(path: str | os.PathLike, user: str, password: str) -> bool:
    """Add ``user`` to the users file at ``path`` (made when missing) or change their password.

    :returns: whether the user is new.
    :raises TrackerError: for a bad user name, a password shorter than
        :data:`MIN_PASSWORD` characters, or a users file that cannot be read.
    """
    check_user_name(user)
    if len(password) < MIN_PASSWORD:
        raise TrackerError(f"the password is too short: expected at least {MIN_PASSWORD} characters")
    users = read_users(path) if Path(path).exists() else {}
    new = user not in users
    users[user] = hash_password(password)
    write_users(path, users)
    return new

__all__ = ["HASH_BYTES", "MIN_PASSWORD", "SALT_BYTES", "SCRYPT_N", "SCRYPT_P", "SCRYPT_R", "USER_NAME",
           "check_user_name", "hash_password", "read_users", "set_password", "verify_password", "write_users"]
