"""One HTTP(S) session with the lab's server: the key, TLS, deadlines and retries, on the standard library.

A :class:`Session` keeps one persistent (keep-alive) connection to the
server of a URL and sends every request of ``/api/v1/`` with the key in
``Authorization: Bearer``. Before anything is sent:

- a plain ``http://`` URL is refused unless its host is a loopback address
  (``localhost``, ``127.0.0.0/8``, ``::1``): the key would cross the
  network in clear text (:func:`check_transport`);
- an ``https://`` connection verifies the server's certificate against the
  system's authorities, or the bundle named by ``TRACKER_CA_FILE`` or
  ``[team] ca_file``; there is no switch that turns verification off.

Every connection attempt and every read has a deadline (``[team] timeout``,
30 s). A request that may be sent twice (``idempotent``: every GET, HEAD and
PUT, and the shipper's offset POSTs) is sent again after a lost connection,
a timeout, a 429 or a 503, after an exponential backoff with jitter, or
after the server's ``Retry-After`` when it gives one; a request that may not
is never sent twice. ``HTTPS_PROXY`` (and ``NO_PROXY``) are honoured as curl
does: an ``http://`` proxy's CONNECT tunnel, TLS end to end through it. The
key never appears in an error, a log line or a ``repr``: messages name the
server and the key's public id.
"""

from __future__ import annotations

import email.utils
import http.client
import ipaddress
import json
import os
import random
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import quote, urlencode, urlsplit

from tracker.core.errors import TrackerError

#: The API's root on the server.
API = "/api/v1"
#: ``[team] timeout``'s default: seconds a connection attempt or a read may take.
DEFAULT_TIMEOUT = 30.0
#: Attempts of an idempotent request before :class:`RemoteUnavailable` is raised.
ATTEMPTS = 5
#: The first backoff, and the longest (seconds); a ``Retry-After`` longer than ``RETRY_AFTER_MAX`` is cut there.
BACKOFF_FIRST = 0.25
BACKOFF_MAX = 10.0
RETRY_AFTER_MAX = 120.0
#: Bytes per ``send`` of a streamed body, and per read of a streamed answer.
BLOCK = 1 << 20
#: The environment variable naming a CA bundle (wins over ``[team] ca_file``).
CA_ENV = "TRACKER_CA_FILE"


class RemoteError(TrackerError):
    """The server answered with an error (or could not be asked).

    :ivar status: the HTTP status (``None``: no answer).
    :ivar body: the answer's JSON document, when it was one (``{"error": ...}`` and its fields).
    """

    def __init__(self, message: str, status: int | None = None, body: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body or {}


class KeyRefused(RemoteError):
    """401 or 403: no key, an unknown, revoked or expired one, or one without the scope or project asked for."""


class RemoteUnavailable(RemoteError):
    """The server cannot be reached or is overloaded (connection lost, timeout, 429, 503) after the retries.

    :ivar retry_after: the seconds the server asked to wait (``Retry-After``), else ``None``.
    """

    def __init__(self, message: str, status: int | None = None, body: dict[str, Any] | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(message, status, body)
        self.retry_after = retry_after


def is_remote_url(text: Any) -> bool:
    """Whether ``text`` names a tracker server (``http://`` or ``https://``)."""
    return isinstance(text, str) and text.lower().startswith(("http://", "https://"))


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine without a doubt: ``localhost`` or a loopback address (no name is looked up)."""
    host = (host or "").strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def shown(url: str) -> str:
    """``url`` as it may be shown: scheme, host, port and path (any ``user:password@`` and query left out)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        port = ""
    return f"{parts.scheme}://{host}{port}{parts.path.rstrip('/')}"


def check_transport(url: str) -> tuple[str, str, int, str]:
    """``(scheme, host, port, base path)`` of a server URL, refused in one line before anything is sent when
    a key would travel in clear text (``http://`` to a host that is not a loopback address).

    :raises TrackerError: not an ``http(s)://`` URL, no host, a bad port, or plain ``http://`` off this machine.
    """
    if not is_remote_url(url):
        raise TrackerError(f"{shown(url) if '://' in str(url) else url!r}: expected an https:// URL of a tracker "
                           "server")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = parts.hostname
    if not host:
        raise TrackerError(f"{shown(url)}: no host in the URL")
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        raise TrackerError(f"{shown(url)}: not a valid port") from None
    if scheme == "http" and not is_loopback(host):
        raise TrackerError(f"refusing to send a key over plain http:// to {host}: use https://{host}"
                           f"{':' + str(parts.port) if parts.port else ''} (http:// is allowed to loopback "
                           "addresses only)")
    return scheme, host, port, parts.path.rstrip("/")


def tls_context(ca_file: str | os.PathLike[str] | None = None) -> ssl.SSLContext:
    """A client TLS context that verifies the server's certificate and host name: against ``ca_file`` when
    given, else the system's authorities. Verification cannot be turned off here.

    :raises TrackerError: ``ca_file`` cannot be read or holds no certificate.
    """
    if ca_file is None:
        return ssl.create_default_context()
    path = Path(ca_file)
    if not path.is_file():
        raise TrackerError(f"{path}: no such CA bundle (TRACKER_CA_FILE or [team] ca_file)")
    try:
        return ssl.create_default_context(cafile=str(path))
    except (ssl.SSLError, OSError) as exc:
        raise TrackerError(f"{path}: not a CA bundle in PEM form ({exc})") from None


def https_proxy(host: str) -> tuple[str, int, dict[str, str]] | None:
    """The proxy to reach ``host`` through over HTTPS: ``HTTPS_PROXY`` (``https_proxy``) unless ``NO_PROXY``
    names the host or the host is this machine; ``(proxy host, port, CONNECT headers)`` or ``None``.

    Only ``http://`` proxies are spoken (a CONNECT tunnel, as curl does by default); their
    ``user:password@`` goes in ``Proxy-Authorization`` and is never shown.

    :raises TrackerError: a proxy URL of another scheme or without a host.
    """
    import urllib.request

    proxy = urllib.request.getproxies().get("https")
    if not proxy or is_loopback(host) or urllib.request.proxy_bypass(host):
        return None
    parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    if parts.scheme.lower() != "http" or not parts.hostname:
        raise TrackerError(f"HTTPS_PROXY: expected an http:// proxy (host and port), given {shown(proxy)!r}")
    try:
        port = parts.port or 1080
    except ValueError:
        raise TrackerError(f"HTTPS_PROXY: not a valid port in {shown(proxy)!r}") from None
    headers = {}
    if parts.username:
        import base64
        from urllib.parse import unquote

        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        headers["Proxy-Authorization"] = "Basic " + base64.b64encode(pair).decode()
    return parts.hostname, port, headers


def retry_after(value: str | None) -> float | None:
    """Seconds of a ``Retry-After`` header (a number or an HTTP date); ``None`` when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        secs = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        secs = when.timestamp() - time.time()
    return min(max(0.0, secs), RETRY_AFTER_MAX)


def backoff(attempt: int, first: float = BACKOFF_FIRST, most: float = BACKOFF_MAX) -> float:
    """The wait before retry number ``attempt`` (0 first): exponential, capped, with jitter (half to all of it)."""
    cap = min(most, first * (2 ** attempt))
    return cap * (0.5 + random.random() / 2)


class Response:
    """A finished answer: ``status``, ``headers`` (lower-case names) and the ``body`` bytes."""

    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self.body = body

    def json(self) -> Any:
        """The body as JSON (``{}`` when empty).

        :raises RemoteError: it is not JSON.
        """
        if not self.body:
            return {}
        try:
            return json.loads(self.body)
        except ValueError:
            raise RemoteError(f"the server answered {self.status} with a body that is not JSON",
                              self.status) from None

    def __repr__(self) -> str:
        return f"<Response {self.status} {len(self.body)} bytes>"


class Session:
    """Requests to one tracker server (see the module's docstring).

    :param url: the server, ``https://host[:port][/path]`` (``http://`` to a loopback address only).
    :param key: the key; default: :func:`tracker.remote.credentials.find_key` (``TRACKER_API_KEY``, else the
        file ``tracker login`` wrote); ``None`` there: requests go without one.
    :param ca_file: a CA bundle to verify the server with (default: ``TRACKER_CA_FILE``, else the system's).
    :param timeout: seconds a connection attempt or a read may take.
    :param attempts: tries of an idempotent request before giving up.
    :raises TrackerError: the URL is refused (:func:`check_transport`) or the CA bundle is unusable.
    """

    def __init__(self, url: str, *, key: str | None | bool = True, ca_file: str | os.PathLike[str] | None = None,
                 timeout: float = DEFAULT_TIMEOUT, attempts: int = ATTEMPTS,
                 sleep: Callable[[float], Any] | None = None) -> None:
        self.scheme, self.host, self.port, self.base = check_transport(url)
        self.url = shown(url)
        if key is True:
            from tracker.remote.credentials import find_key

            key = find_key(url)
        self.__key: str | None = key or None
        ca = ca_file if ca_file is not None else (os.environ.get(CA_ENV) or None)
        self.ssl = tls_context(ca) if self.scheme == "https" else None
        self.timeout = float(timeout)
        self.attempts = max(1, int(attempts))
        self.sleep = sleep or time.sleep
        self.proxy = https_proxy(self.host) if self.scheme == "https" else None
        self._conn: http.client.HTTPConnection | None = None
        self._lock = threading.RLock()

    @classmethod
    def from_config(cls, url: str, config: Any = None, **kw: Any) -> Session:
        """A session with ``[team] timeout`` and ``[team] ca_file`` of ``config`` (``TRACKER_CA_FILE`` wins)."""
        timeout = getattr(config, "team_timeout", None)
        ca = os.environ.get(CA_ENV) or getattr(config, "team_ca_file", None)
        kw.setdefault("timeout", float(timeout) if isinstance(timeout, (int, float)) else DEFAULT_TIMEOUT)
        kw.setdefault("ca_file", ca)
        return cls(url, **kw)

    @property
    def has_key(self) -> bool:
        """Whether requests carry a key."""
        return self.__key is not None

    @property
    def key_id(self) -> str | None:
        """The public id of the key (``trk_<id>_...``), never the secret."""
        if self.__key is None:
            return None
        from tracker.remote.credentials import key_id

        return key_id(self.__key)

    def __repr__(self) -> str:
        via = f" via proxy {self.proxy[0]}:{self.proxy[1]}" if self.proxy is not None else ""
        return f"<Session {self.url}{via} key={self.key_id or 'none'}>"

    def scrub(self, text: str) -> str:
        """``text`` with the key (should it be quoted anywhere, e.g. by a server's error) replaced by ``***``."""
        if self.__key:
            text = text.replace(self.__key, "***")
            secret = self.__key.rpartition("_")[2]
            if len(secret) >= 16:
                text = text.replace(secret, "***")
        return text

    # --- the connection ----------------------------------------------------------------------------

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            if self.ssl is not None and self.proxy is not None:
                # Through the proxy's CONNECT tunnel: TLS is still end to end, verified for self.host.
                host, port, headers = self.proxy
                self._conn = http.client.HTTPSConnection(host, port, timeout=self.timeout, context=self.ssl,
                                                         blocksize=BLOCK)
                self._conn.set_tunnel(self.host, self.port, headers=headers)
            elif self.ssl is not None:
                self._conn = http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout,
                                                         context=self.ssl, blocksize=BLOCK)
            else:
                self._conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout, blocksize=BLOCK)
        return self._conn

    def close(self) -> None:
        """Close the connection (the next request opens another)."""
        with self._lock:
            if self._conn is not None:
                try:
                    self._conn.close()
                except OSError:
                    pass
                self._conn = None

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def path(self, path: str, params: dict[str, Any] | None = None) -> str:
        """The request target of ``path`` (under the URL's base path), with ``params`` as its query."""
        target = self.base + (path if path.startswith("/") else "/" + path)
        if params:
            target += "?" + urlencode({k: v for k, v in params.items() if v is not None}, doseq=True)
        return target

    def _headers(self, extra: dict[str, str] | None) -> dict[str, str]:
        headers = {"User-Agent": _user_agent(), "Accept": "application/json"}
        if self.__key is not None:
            headers["Authorization"] = f"Bearer {self.__key}"
        if extra:
            headers.update(extra)
        return headers

    def _fail_line(self, method: str, target: str, exc: BaseException) -> str:
        if isinstance(exc, ssl.SSLCertVerificationError):
            why = f"the server's certificate is not trusted ({exc.verify_message or exc.reason}); give its CA " \
                  "bundle with TRACKER_CA_FILE or [team] ca_file"
        elif isinstance(exc, ssl.SSLError):
            why = f"TLS failed ({exc.reason or exc})"
        elif isinstance(exc, (socket.timeout, TimeoutError)):
            why = f"no answer within {self.timeout:g}s"
        elif isinstance(exc, ConnectionRefusedError):
            why = "connection refused"
        elif isinstance(exc, OSError) and exc.strerror:
            why = exc.strerror.lower()
        else:
            why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return self.scrub(f"{method} {self.url}{target[len(self.base):].split('?')[0]}: {why}")

    def _fresh(self) -> bool:
        """Whether the kept connection is still usable: a server that closed it while idle (its keep-alive timeout)
        left it readable (the end of the stream), and a request sent there would be lost; it is closed then."""
        sock = self._conn.sock if self._conn is not None else None
        if sock is None:
            return True
        try:
            readable, _, _ = select.select([sock], [], [], 0)
        except (OSError, ValueError):
            readable = [sock]
        if readable:
            self.close()
            return False
        return True

    def _send(self, method: str, target: str, body: Any, headers: dict[str, str]) -> http.client.HTTPResponse:
        self._fresh()
        conn = self._connection()
        try:
            conn.request(method, target, body=body, headers=headers)
            return conn.getresponse()
        except BaseException:
            self.close()
            raise

    # --- requests ----------------------------------------------------------------------------------

    def request(self, method: str, path: str, *, params: dict[str, Any] | None = None, body: Any = None,
                headers: dict[str, str] | None = None, idempotent: bool | None = None, ok: tuple[int, ...] = (),
                attempts: int | None = None) -> Response:
        """Send one request and read its whole answer.

        :param body: bytes, or a callable returning a fresh file object (and ``Content-Length`` in
            ``headers``) for each attempt: a streamed body.
        :param idempotent: whether the request may be sent again (default: GET, HEAD, PUT, DELETE).
        :param ok: statuses besides 2xx that are answers, not errors (e.g. 404 for HEAD, 409).
        :raises KeyRefused: 401 or 403. :raises RemoteUnavailable: no answer, 429 or 503 after the retries.
        :raises RemoteError: any other status >= 300 that is not in ``ok``.
        """
        with self.stream(method, path, params=params, body=body, headers=headers, idempotent=idempotent, ok=ok,
                         attempts=attempts) as resp:
            data = resp.read()
            return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, data)

    def json(self, method: str, path: str, doc: Any = None, **kw: Any) -> Any:
        """Send ``doc`` as JSON (if given) and return the answer's JSON."""
        headers = dict(kw.pop("headers", None) or {})
        body = None
        if doc is not None:
            body = json.dumps(doc).encode()
            headers["Content-Type"] = "application/json"
        return self.request(method, path, body=body, headers=headers, **kw).json()

    @contextmanager
    def stream(self, method: str, path: str, *, params: dict[str, Any] | None = None, body: Any = None,
               headers: dict[str, str] | None = None, idempotent: bool | None = None, ok: tuple[int, ...] = (),
               attempts: int | None = None) -> Iterator[http.client.HTTPResponse]:
        """Send one request and hand over its answer unread (``read(n)`` it in blocks: a large blob).

        Retries happen before the answer's status is in; once handed over, a lost connection is the
        caller's :class:`OSError`. The answer must be read (or the block left) before the next request.
        Errors as for :meth:`request`.
        """
        if idempotent is None:
            idempotent = method in ("GET", "HEAD", "PUT", "DELETE", "OPTIONS")
        target = self.path(path, params)
        tries = (attempts or self.attempts) if idempotent else 1
        with self._lock:
            resp = self._attempts(method, target, body, headers, tries, ok)
            try:
                yield resp
            except BaseException:
                self.close()  # an answer left half read cannot carry the next request
                raise
            finally:
                if not resp.isclosed():
                    left = resp.length
                    if left is not None and left <= BLOCK:
                        try:
                            resp.read()  # a short rest is drained, so the connection is kept
                        except (OSError, http.client.HTTPException):
                            self.close()
                    else:
                        self.close()  # a long rest (a blob left half read) costs less as a new connection
                if resp.will_close:
                    self.close()

    def _attempts(self, method: str, target: str, body: Any, headers: dict[str, str] | None, tries: int,
                  ok: tuple[int, ...]) -> http.client.HTTPResponse:
        last: RemoteUnavailable | None = None
        for attempt in range(tries):
            if attempt:
                wait = last.retry_after if last is not None and last.retry_after is not None else backoff(attempt - 1)
                self.sleep(wait)
            payload = body() if callable(body) else body
            try:
                resp = self._send(method, target, payload, self._headers(headers))
            except ssl.SSLCertVerificationError as exc:
                raise RemoteError(self._fail_line(method, target, exc)) from None  # never retried, never ignored
            except (OSError, http.client.HTTPException) as exc:
                last = RemoteUnavailable(self._fail_line(method, target, exc))
                continue
            finally:
                if callable(body) and hasattr(payload, "close"):
                    payload.close()
            if resp.status < 300 or resp.status in ok:
                return resp
            error = self._error(method, target, resp)
            if isinstance(error, RemoteUnavailable):
                last = error
                continue
            raise error
        assert last is not None
        raise last

    def _error(self, method: str, target: str, resp: http.client.HTTPResponse) -> RemoteError:
        """The error for a status >= 300 (the answer read and dropped)."""
        status = resp.status
        wait = retry_after(resp.getheader("Retry-After"))
        try:
            raw = resp.read(1 << 16)
            if not resp.isclosed():
                self.close()  # a long error body is not read to its end
        except (OSError, http.client.HTTPException):
            raw = b""
            self.close()
        try:
            doc = json.loads(raw) if raw else {}
        except ValueError:
            doc = {}
        if not isinstance(doc, dict):
            doc = {}
        said = doc.get("error") if isinstance(doc.get("error"), str) else resp.reason
        where = f"{method} {self.url}{target[len(self.base):].split('?')[0]}"
        line = self.scrub(f"{where}: {status} {said}")
        if status in (401, 403):
            return KeyRefused(line + ("" if self.has_key else " (no key: run `tracker login URL` or set "
                                                             "TRACKER_API_KEY)"), status, doc)
        if status in (429, 502, 503, 504):
            return RemoteUnavailable(line, status, doc, wait)
        return RemoteError(line, status, doc)

    # --- the API's common calls --------------------------------------------------------------------

    def whoami(self) -> dict[str, Any]:
        """``GET /api/v1/whoami``: the key's id, name, scope, projects and expiry."""
        doc = self.json("GET", f"{API}/whoami")
        if not isinstance(doc, dict):
            raise RemoteError(f"GET {self.url}{API}/whoami: expected a JSON object")
        return doc

    def put_file(self, path: str, file: str | os.PathLike[str], size: int, *, ok: tuple[int, ...] = (),
                 on_block: Callable[[int], Any] | None = None) -> Response:
        """``PUT`` the file's ``size`` bytes, streamed from the disk in blocks (sent again from its start on retry)."""

        def opened() -> BinaryIO:
            f = open(file, "rb")  # noqa: SIM115 - closed by the request after each attempt
            return _Counted(f, size, on_block) if on_block is not None else f  # type: ignore[return-value]

        return self.request("PUT", path, body=opened, ok=ok,
                            headers={"Content-Length": str(size), "Content-Type": "application/octet-stream"})


class _Counted:
    """A file read in blocks that tells ``on_block`` how many bytes went (a progress bar)."""

    def __init__(self, f: BinaryIO, size: int, on_block: Callable[[int], Any]) -> None:
        self.f = f
        self.size = size
        self.on_block = on_block

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        if data:
            self.on_block(len(data))
        return data

    def close(self) -> None:
        self.f.close()


_agent: list[str] = []


def _user_agent() -> str:
    """``tracker/<version>`` (the installed distribution's version, looked up once)."""
    if not _agent:
        from importlib.metadata import PackageNotFoundError, version

        try:
            _agent.append(f"tracker/{version('tracker-core')}")
        except PackageNotFoundError:
            _agent.append("tracker")
    return _agent[0]


def quote_segment(name: str, safe: str = "") -> str:
    """``name`` as one path segment of a URL (``safe``: characters left as they are, e.g. ``/``)."""
    return quote(name, safe=safe)


__all__ = ["API", "ATTEMPTS", "KeyRefused", "RemoteError", "RemoteUnavailable", "Response", "Session", "backoff",
           "check_transport", "https_proxy", "is_loopback", "is_remote_url", "quote_segment", "retry_after", "shown",
           "tls_context"]
