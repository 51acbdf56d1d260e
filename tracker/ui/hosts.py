"""The dashboard's Host check: only requests that name the address it serves are answered.

A web page the user opens elsewhere can point a name it controls at
127.0.0.1 (DNS rebinding) and then read the dashboard as its own origin.
Its requests still carry that name in their ``Host`` header, so the app
answers only a ``Host`` that is a loopback name or address (``127.0.0.1``,
``localhost``, ``[::1]``), the ``--host`` the server was started with, or
the address the connection actually arrived at (the ASGI ``server`` of the
request: for ``--host 0.0.0.0``, the machine's own address the client
dialled). Anything else gets 403, with or without a port.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable
from typing import Any

#: Always accepted: the names and addresses of this machine's loopback.
LOOPBACK = ("localhost", "127.0.0.1", "::1")


def host_name(header: str) -> str:
    """The host part of a ``Host`` header, lower case, without port, brackets or a final dot.

    ``"[::1]:5170"`` -> ``"::1"``, ``"LocalHost.:80"`` -> ``"localhost"``;
    ``""`` for a header that names no host.
    """
    h = header.strip().lower()
    if h.startswith("["):
        end = h.find("]")
        if end < 0 or (h[end + 1:] and not h[end + 1:].startswith(":")):
            return ""
        h = h[1:end]
    elif h.count(":") == 1:
        h = h.split(":", 1)[0]
    elif ":" in h:
        return ""  # an IPv6 address without brackets is not a valid Host
    return h.rstrip(".")


def _normal(host: str) -> str:
    """``host`` as :func:`host_name` gives it (an IPv6 address compressed), for comparing."""
    h = host_name(host) if host.startswith("[") else host.strip().lower().rstrip(".")
    try:
        return str(ipaddress.ip_address(h))
    except ValueError:
        return h


def allowed(header: str, extra: Iterable[str] = (), server: str | None = None) -> bool:
    """Whether a request with ``Host: header`` may be answered.

    :param extra: further names or addresses to accept (the ``--host`` given).
    :param server: the address the connection arrived at.
    """
    name = _normal(host_name(header))
    if not name:
        return False
    if name in LOOPBACK:
        return True
    try:
        if ipaddress.ip_address(name).is_loopback:
            return True
    except ValueError:
        pass
    wild = ("0.0.0.0", "::")
    ok = {_normal(h) for h in extra if h and _normal(h) not in wild}
    if server:
        ok.add(_normal(server))
    return name in ok


class HostCheck:
    """ASGI middleware: 403 for a request whose ``Host`` is not :func:`allowed`.

    :param hosts: names or addresses accepted besides the loopback ones
        (``tracker ui --host X`` passes X).
    """

    def __init__(self, app: Any, hosts: Iterable[str] = ()) -> None:
        self.app = app
        self.hosts = tuple(hosts)

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        header = ""
        for k, v in scope.get("headers") or ():
            if k == b"host":
                header = v.decode("latin-1")
                break
        server = (scope.get("server") or (None,))[0]
        if allowed(header, self.hosts, server):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        shown = header[:100] if header else "(none)"
        body = json.dumps({"error": f"Host {shown} is not this dashboard's address; open it at 127.0.0.1 or "
                                    "localhost (or the --host it was started with)"}).encode()
        await send({"type": "http.response.start", "status": 403,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"cache-control", b"no-store")]})
        await send({"type": "http.response.body", "body": body})


__all__ = ["LOOPBACK", "HostCheck", "allowed", "host_name"]
