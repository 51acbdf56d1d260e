"""Who gets in to a dashboard served to the network: a token or a users file, sessions, the login page.

``tracker ui --auth token`` makes a random token (printed once, in the URL of
the banner); ``?token=`` on any page is exchanged for a session cookie and the
page reloaded without it, and API clients send ``Authorization: Bearer``.
``tracker ui --auth users.toml`` asks for a user name and a password
(:mod:`hashlib` scrypt hashes, written by ``tracker ui passwd USER``).
Either way :class:`AuthMiddleware` answers a request only with a session
(kept in memory, so logging out really ends it), compares secrets in
constant time, and refuses further attempts from an address after
:data:`MAX_FAILURES` failures in a minute (429, ``Retry-After``).

Plain ASGI, no Starlette import: the users file is read and written without the ui extra.
Imports tracker.core only.
"""

from __future__ import annotations

import hashlib
import hmac
import html
import logging
import math
import os
import re
import secrets
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from tracker.core.errors import TrackerError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

log = logging.getLogger(__name__)

#: scrypt's cost parameters for new hashes (OWASP's n=2**15, r=8, p=3: 32 MiB, a few tenths of a second);
#: each hash keeps its own, so raising them later leaves older entries valid.
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**15, 8, 3
SALT_BYTES, HASH_BYTES = 16, 32
#: Failed logins an address may make within :data:`FAILURE_WINDOW` seconds before it gets 429.
MAX_FAILURES, FAILURE_WINDOW = 5, 60.0
#: How long a session lasts after its login, in seconds.
SESSION_SECONDS = 7 * 24 * 3600
MIN_PASSWORD = 8
USER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
_HEX = re.compile(r"[0-9a-f]+")
#: Static files the login page itself needs: the only paths answered without a session.
LOGIN_FILES = ("/static/style.css", "/static/login.css")
_MAX_FORM = 8192
#: Password checks at once (each takes scrypt's memory): more wait their turn.
_CHECKS = threading.BoundedSemaphore(2)


# --- the users file -------------------------------------------------------------------------------


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


# --- sessions and failed attempts -------------------------------------------------------------------


@dataclass
class Session:
    """One login: who, when it ends, and the credential it was made with (a changed password ends it)."""

    user: str
    expires: float
    proof: str


class Sessions:
    """Sessions kept in memory, keyed by the SHA-256 of their cookie (a lookup leaks nothing of a cookie)."""

    def __init__(self, seconds: float = SESSION_SECONDS, limit: int = 10_000,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self.limit = limit
        self.clock = clock
        self._by_key: dict[str, Session] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(cookie: str) -> str:
        return hashlib.sha256(cookie.encode("utf-8", "replace")).hexdigest()

    def create(self, user: str, proof: str = "") -> str:
        """A new session of ``user``; returns the cookie value (256 random bits)."""
        cookie = secrets.token_urlsafe(32)
        with self._lock:
            now = self.clock()
            if len(self._by_key) >= self.limit:
                for key in [k for k, s in self._by_key.items() if s.expires <= now]:
                    del self._by_key[key]
                while len(self._by_key) >= self.limit:  # the oldest logins go first
                    del self._by_key[min(self._by_key, key=lambda k: self._by_key[k].expires)]
            self._by_key[self._key(cookie)] = Session(user, now + self.seconds, proof)
        return cookie

    def get(self, cookie: str | None) -> Session | None:
        """The live session of ``cookie``, else ``None``."""
        if not cookie:
            return None
        key = self._key(cookie)
        with self._lock:
            session = self._by_key.get(key)
            if session is not None and session.expires <= self.clock():
                del self._by_key[key]
                return None
            return session

    def drop(self, cookie: str | None) -> None:
        """End the session of ``cookie`` (its cookie is refused from now on)."""
        if cookie:
            with self._lock:
                self._by_key.pop(self._key(cookie), None)

    def __len__(self) -> int:
        return len(self._by_key)


class FailureLimit:
    """Failed attempts per client address: after ``limit`` within ``window`` seconds, wait."""

    def __init__(self, limit: int = MAX_FAILURES, window: float = FAILURE_WINDOW,
                 clock: Callable[[], float] = time.monotonic, addresses: int = 10_000) -> None:
        self.limit = limit
        self.window = window
        self.clock = clock
        self.addresses = addresses
        self._times: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def _recent(self, address: str, now: float) -> list[float]:
        times = [t for t in self._times.get(address, ()) if t > now - self.window]
        if times:
            self._times[address] = times
        else:
            self._times.pop(address, None)
        return times

    def wait(self, address: str) -> int:
        """Seconds ``address`` must wait before trying again (0: it may try now)."""
        with self._lock:
            now = self.clock()
            times = self._recent(address, now)
            if len(times) < self.limit:
                return 0
            return max(1, math.ceil(times[-self.limit] + self.window - now))

    def failed(self, address: str) -> None:
        """Count a failed attempt of ``address``."""
        with self._lock:
            now = self.clock()
            if address not in self._times and len(self._times) >= self.addresses:
                for a in list(self._times):
                    self._recent(a, now)
                if len(self._times) >= self.addresses:
                    self._times.pop(next(iter(self._times)))
            self._times.setdefault(address, []).append(now)

    def succeeded(self, address: str) -> None:
        """Forget the failures of ``address`` (it logged in)."""
        with self._lock:
            self._times.pop(address, None)


# --- the two ways in --------------------------------------------------------------------------------


class Auth:
    """What the middleware asks of a way in: check credentials; sessions and the failure limit are shared."""

    #: ``"token"`` or ``"users"``.
    mode = ""

    def __init__(self) -> None:
        self.sessions = Sessions()
        self.limit = FailureLimit()

    def login(self, form: dict[str, str]) -> tuple[str, str] | None:
        """``(user, proof)`` when the login form's credentials are right, else ``None`` (may take 0.1 s)."""
        raise NotImplementedError

    def still_valid(self, session: Session) -> bool:
        """Whether a session's credential still holds (a changed password or a removed user ends it)."""
        return True


class TokenAuth(Auth):
    """One secret token (``tracker ui --auth token``); :attr:`token` is random unless given."""

    mode = "token"

    def __init__(self, token: str | None = None) -> None:
        super().__init__()
        self.token = token or secrets.token_urlsafe(32)

    def check(self, given: str) -> bool:
        """Whether ``given`` is the token (constant time)."""
        return hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode("utf-8"))

    def login(self, form: dict[str, str]) -> tuple[str, str] | None:
        return ("token", "") if self.check(form.get("token", "")) else None


class UsersAuth(Auth):
    """Users and passwords of a users file (``tracker ui --auth users.toml``), read again when it changes.

    :raises TrackerError: for a file that cannot be read, is not valid, or holds no user.
    """

    mode = "users"

    def __init__(self, path: str | os.PathLike) -> None:
        super().__init__()
        self.path = Path(path)
        self._stamp: tuple[int, int] | None = None
        self.users = self._load()
        if not self.users:
            raise TrackerError(f"{self.path} holds no user: add one with `tracker ui passwd USER --file {self.path}`")
        # Hashed for an unknown user name, so that it costs as long as a known one.
        self._decoy = hash_password(secrets.token_hex(8))

    def _load(self) -> dict[str, dict[str, Any]]:
        st = self.path.stat() if self.path.exists() else None
        users = read_users(self.path)
        self._stamp = (st.st_mtime_ns, st.st_size) if st else None
        return users

    def refresh(self) -> None:
        """Read the file again when it changed (``tracker ui passwd`` while serving); a bad file keeps the users."""
        try:
            st = self.path.stat()
            stamp = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = None
        if stamp == self._stamp:
            return
        try:
            self.users = self._load()
        except TrackerError as exc:
            self._stamp = stamp
            log.warning("tracker ui: keeping the users read before: %s", exc)

    def login(self, form: dict[str, str]) -> tuple[str, str] | None:
        self.refresh()
        user, password = form.get("user", ""), form.get("password", "")
        entry = self.users.get(user)
        with _CHECKS:
            ok = verify_password(password, entry if entry is not None else self._decoy)
        return (user, entry["hash"]) if ok and entry is not None else None

    def still_valid(self, session: Session) -> bool:
        self.refresh()
        entry = self.users.get(session.user)
        return entry is not None and hmac.compare_digest(entry["hash"], session.proof)


def make_auth(value: Any) -> Auth | None:
    """The :class:`Auth` of ``create_app(auth=...)``: ``None``, an :class:`Auth`, ``"token"`` or a users file."""
    if value is None or isinstance(value, Auth):
        return value
    if value == "token":
        return TokenAuth()
    if isinstance(value, (str, os.PathLike)):
        return UsersAuth(value)
    raise TypeError(f"auth: expected None, 'token', a users file or an Auth, given {type(value).__name__}")


# --- the middleware ---------------------------------------------------------------------------------


def _header(scope: dict, name: bytes) -> str:
    for k, v in scope.get("headers") or ():
        if k == name:
            return v.decode("latin-1")
    return ""


def _cookies(scope: dict) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in scope.get("headers") or ():
        if k == b"cookie":
            for part in v.decode("latin-1").split(";"):
                name, eq, value = part.strip().partition("=")
                if eq and name not in out:
                    out[name] = value.strip().strip('"')
    return out


def safe_next(target: str | None) -> str:
    """Where to go after logging in: a path of this server (never another site), without a token."""
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")) or \
            any(ord(c) < 32 or c == "\\" for c in target):
        return "/"
    path, _, query = target.partition("?")
    if path in ("/login", "/logout"):
        return "/"
    pairs = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if k != "token"]
    return path + ("?" + urlencode(pairs) if pairs else "")


def _json_body(message: str) -> bytes:
    import json

    return json.dumps({"error": message}).encode()


LOGIN_CSP = (b"default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; "
             b"base-uri 'none'; frame-ancestors 'none'")


def login_page(mode: str, next_path: str = "/", message: str = "", note: str = "", user: str = "") -> bytes:
    """The login page: the dashboard's header and stylesheet, one form, no script."""
    esc = html.escape
    if mode == "token":
        fields = ('<label>Token <input type="password" name="token" autocomplete="off" required autofocus>'
                  '</label><p class="muted hint">The token is in the URL that <code>tracker ui</code> printed '
                  "when it started.</p>")
    else:
        fields = (f'<label>User <input name="user" autocomplete="username" value="{esc(user)}" required '
                  f'{"" if user else "autofocus"}></label><label>Password <input type="password" name="password" '
                  f'autocomplete="current-password" required {"autofocus" if user else ""}></label>')
    shown = (f'<p class="error" role="alert">{esc(message)}</p>' if message else "") + \
        (f'<p class="notice">{esc(note)}</p>' if note else "")
    return ('<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1"><title>tracker: log in</title>'
            '<link rel="icon" href="data:,"><link rel="stylesheet" href="/static/style.css">'
            '<link rel="stylesheet" href="/static/login.css"></head><body>'
            '<header class="top"><span class="brand">tracker</span></header><main class="app">'
            '<form class="box login" method="post" action="/login"><h1>Log in</h1>'
            f'{shown}{fields}<input type="hidden" name="next" value="{esc(next_path)}">'
            '<button class="primary" type="submit">Log in</button></form></main></body></html>\n').encode()


class AuthMiddleware:
    """ASGI middleware: every request needs a session, except the login page and what it needs.

    ``/login`` (GET: the form; POST: check it, then a session cookie and a
    redirect) and ``/logout`` (ends the session) are answered here. Without a
    session, a page (``GET``, outside ``/api/`` and ``/static/``) is sent to
    the login page, anything else gets 401. With ``--auth token``, a right
    ``?token=`` makes a session and redirects to the same URL without it, and
    ``Authorization: Bearer TOKEN`` is let through on its own. A wrong
    credential counts against the client's address (:class:`FailureLimit`).
    """

    def __init__(self, app: Any, auth: Auth) -> None:
        self.app = app
        self.auth = auth

    # -- helpers

    @staticmethod
    def cookie_name(scope: dict) -> str:
        """The session cookie's name: one per port, so dashboards on two ports of a host keep their own."""
        server = scope.get("server") or (None, None)
        return f"tracker-session-{server[1]}" if server[1] else "tracker-session"

    def _set_cookie(self, scope: dict, value: str, max_age: int) -> tuple[bytes, bytes]:
        secure = "; Secure" if scope.get("scheme") in ("https", "wss") else ""
        return (b"set-cookie", f"{self.cookie_name(scope)}={value}; Path=/; Max-Age={max_age}; HttpOnly; "
                               f"SameSite=Strict{secure}".encode())

    @staticmethod
    async def _send(send: Any, status: int, body: bytes = b"", content_type: bytes = b"application/json",
                    headers: list[tuple[bytes, bytes]] | None = None) -> None:
        hs = [(b"content-type", content_type), (b"content-length", str(len(body)).encode()),
              (b"cache-control", b"no-store"), *(headers or [])]
        await send({"type": "http.response.start", "status": status, "headers": hs})
        await send({"type": "http.response.body", "body": body})

    async def _redirect(self, send: Any, location: str, headers: list[tuple[bytes, bytes]] | None = None) -> None:
        await self._send(send, 303, b"", b"text/plain", [(b"location", quote(location, safe="/?&=%:@!$'()*+,;-._~")
                                                         .encode()), *(headers or [])])

    async def _page(self, send: Any, status: int, body: bytes,
                    headers: list[tuple[bytes, bytes]] | None = None) -> None:
        await self._send(send, status, body, b"text/html; charset=utf-8",
                         [(b"content-security-policy", LOGIN_CSP), *(headers or [])])

    @staticmethod
    def _address(scope: dict) -> str:
        client = scope.get("client")
        return str(client[0]) if client else "unknown"

    @staticmethod
    def _is_page(scope: dict) -> bool:
        path = scope["path"]
        return scope.get("method") in ("GET", "HEAD") and not (path == "/api" or path.startswith(("/api/", "/static/")))

    async def _too_many(self, scope: dict, send: Any, wait: int) -> None:
        text = f"too many failed logins from this address: try again in {wait} s"
        retry = [(b"retry-after", str(wait).encode())]
        if self._is_page(scope) or scope["path"] == "/login":
            await self._page(send, 429, login_page(self.auth.mode, "/", text), retry)
        else:
            await self._send(send, 429, _json_body(text), headers=retry)

    def _session(self, scope: dict) -> tuple[str | None, Session | None]:
        cookie = _cookies(scope).get(self.cookie_name(scope))
        session = self.auth.sessions.get(cookie)
        if session is not None and not self.auth.still_valid(session):
            self.auth.sessions.drop(cookie)
            session = None
        return cookie, session

    # -- the ASGI call

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        kind = scope["type"]
        if kind not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if kind == "http" and path == "/login":
            await self._login(scope, receive, send)
            return
        if kind == "http" and path == "/logout":
            cookie, _ = self._session(scope)
            self.auth.sessions.drop(cookie)
            # Only a request that carried the cookie clears it (another site's link to /logout carries none).
            await self._redirect(send, "/login?out=1", [self._set_cookie(scope, "", 0)] if cookie else [])
            return
        if kind == "http" and path in LOGIN_FILES and scope.get("method") in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        token_in_url = kind == "http" and "token" in dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        if token_in_url and isinstance(self.auth, TokenAuth):  # even with a session: the token leaves the URL
            await self._token(scope, receive, send)
            return
        _, session = self._session(scope)
        if session is not None:
            await self.app(scope, receive, self._with_logout(scope, send, session.user))
            return
        if kind == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        if isinstance(self.auth, TokenAuth) and await self._token(scope, receive, send):
            return
        if self._is_page(scope):
            query = scope.get("query_string", b"").decode("latin-1")
            target = safe_next(path + ("?" + query if query else ""))
            await self._redirect(send, "/login?" + urlencode({"next": target}))
            return
        how = ("send Authorization: Bearer TOKEN, or open the URL with ?token= that tracker ui printed"
               if self.auth.mode == "token" else "log in at /login")
        headers = [(b"www-authenticate", b'Bearer realm="tracker"')] if self.auth.mode == "token" else []
        await self._send(send, 401, _json_body(f"not logged in: {how}"), headers=headers)

    async def _token(self, scope: dict, receive: Any, send: Any) -> bool:
        """Handle a Bearer header or a ``?token=``; ``True`` when a response was sent or the app was called."""
        auth = self.auth
        assert isinstance(auth, TokenAuth)
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = [v for k, v in query if k == "token"]
        bearer = "" if given else _header(scope, b"authorization")
        if not bearer and not given:
            return False
        address = self._address(scope)
        wait = auth.limit.wait(address)
        if wait:
            await self._too_many(scope, send, wait)
            return True
        if bearer:
            scheme, _, value = bearer.partition(" ")
            if scheme.lower() == "bearer" and auth.check(value.strip()):
                await self.app(scope, receive, send)
                return True
        elif auth.check(given[-1]):
            auth.limit.succeeded(address)
            cookie = auth.sessions.create("token")
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            path = (scope.get("raw_path") or quote(scope["path"]).encode()).decode("latin-1")
            await self._redirect(send, path + ("?" + rest if rest else ""),
                                 [self._set_cookie(scope, cookie, int(auth.sessions.seconds))])
            return True
        auth.limit.failed(address)
        log.warning("tracker ui: wrong token from %s", address)
        if self._is_page(scope):
            await self._page(send, 401, login_page("token", safe_next(scope["path"]), "Wrong token."))
        else:
            await self._send(send, 401, _json_body("wrong token"), headers=[(b"www-authenticate",
                                                                              b'Bearer realm="tracker", '
                                                                              b'error="invalid_token"')])
        return True

    async def _login(self, scope: dict, receive: Any, send: Any) -> None:
        method = scope.get("method")
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
        mode = self.auth.mode
        if method in ("GET", "HEAD"):
            target = safe_next(query.get("next"))
            if self._session(scope)[1] is not None:
                await self._redirect(send, target)
                return
            note = "Logged out." if query.get("out") else ""
            await self._page(send, 200, login_page(mode, target, note=note))
            return
        if method != "POST":
            await self._send(send, 405, _json_body("use GET or POST on /login"), headers=[(b"allow", b"GET, POST")])
            return
        origin = _header(scope, b"origin")
        if origin and origin != "null" and origin.split("://", 1)[-1].lower() != _header(scope, b"host").lower():
            await self._send(send, 403, _json_body("a login form of another site is refused"))
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > _MAX_FORM:
                await self._send(send, 413, _json_body(f"the login form is larger than {_MAX_FORM} bytes"))
                return
            if not message.get("more_body"):
                break
        form = dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))
        target = safe_next(form.get("next"))
        address = self._address(scope)
        wait = self.auth.limit.wait(address)
        if wait:
            await self._too_many(scope, send, wait)
            return
        from anyio import to_thread  # Starlette's own dependency: scrypt off the event loop

        who = await to_thread.run_sync(self.auth.login, form)
        if who is None:
            self.auth.limit.failed(address)
            # A user name is shown (logged, kept in the form) only when it is one: a password typed
            # into the user field by mistake is never printed.
            user = form.get("user", "")
            known = user if isinstance(self.auth, UsersAuth) and user in self.auth.users else ""
            log.warning("tracker ui: failed login of %s from %s",
                        "the token" if mode == "token" else f"user {known!r}" if known else "an unknown user", address)
            text = "Wrong token." if mode == "token" else "Wrong user name or password."
            await self._page(send, 401, login_page(mode, target, text, user=known))
            return
        self.auth.limit.succeeded(address)
        cookie = self.auth.sessions.create(*who)
        await self._redirect(send, target, [self._set_cookie(scope, cookie, int(self.auth.sessions.seconds))])

    def _with_logout(self, scope: dict, send: Any, user: str) -> Any:
        """``send`` that adds a "log out" link to the header of the dashboard's HTML page."""
        if not self._is_page(scope) or scope.get("method") != "GET":
            return send
        start: dict | None = None
        chunks: list[bytes] = []

        async def wrapped(message: dict) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                ctype = dict(message.get("headers") or []).get(b"content-type", b"")
                if message.get("status") == 200 and ctype.startswith(b"text/html"):
                    start = message
                    return
            elif message["type"] == "http.response.body" and start is not None:
                chunks.append(message.get("body", b""))
                if message.get("more_body"):
                    return
                body = b"".join(chunks)
                who = f'<span class="who">{html.escape(user)}</span> ' if self.auth.mode == "users" else ""
                # target="_self": the page's router leaves the link to the browser
                link = (f'<span class="logout">{who}<a href="/logout" target="_self">log out</a></span>'
                        "</header>").encode()
                if b"</header>" in body and b"</head>" in body:
                    body = body.replace(b"</head>", b'<link rel="stylesheet" href="/static/login.css"></head>', 1)
                    body = body.replace(b"</header>", link, 1)
                headers = [(k, v) for k, v in start.get("headers", []) if k != b"content-length"]
                await send({**start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
            await send(message)

        return wrapped


__all__ = ["Auth", "AuthMiddleware", "FailureLimit", "Sessions", "TokenAuth", "UsersAuth", "hash_password",
           "make_auth", "read_users", "set_password", "verify_password", "write_users"]
