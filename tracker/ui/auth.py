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

The users file is :mod:`tracker.ui.users`, sessions and the failure limit
:mod:`tracker.ui.sessions` (their names are imported from here too); API keys
(``tracker server``) are checked before this middleware by :mod:`tracker.ui.keyauth`.
Plain ASGI, no Starlette import: the users file is read and written without the ui extra.
Imports tracker.core only.
"""

from __future__ import annotations

import hmac
import html
import logging
import os
import secrets
import threading
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from tracker.core.errors import TrackerError
from tracker.ui.sessions import (  # noqa: F401 - their old home: imported from here too
    FAILURE_WINDOW,
    MAX_FAILURES,
    SESSION_SECONDS,
    FailureLimit,
    Session,
    Sessions,
)
from tracker.ui.users import (  # noqa: F401 - their old home: imported from here too
    HASH_BYTES,
    MIN_PASSWORD,
    SALT_BYTES,
    SCRYPT_N,
    SCRYPT_P,
    SCRYPT_R,
    USER_NAME,
    check_user_name,
    hash_password,
    read_users,
    set_password,
    verify_password,
    write_users,
)

log = logging.getLogger(__name__)

#: Static files the login page itself needs: the only paths answered without a session.
LOGIN_FILES = ("/static/style.css", "/static/login.css")
_MAX_FORM = 8192
#: Password checks at once (each takes scrypt's memory): more wait their turn.
_CHECKS = threading.BoundedSemaphore(2)


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
        if kind not in ("http", "websocket") or scope.get("tracker.key") is not None or scope.get("tracker.public"):
            # A request with a valid API key, or the API's description (tracker.ui.keyauth let it in).
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
