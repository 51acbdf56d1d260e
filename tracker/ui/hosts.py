"""The dashboard's Host check: only requests that name the address it serves are answered.

A web page the user opens elsewhere can point a name it controls at
127.0.0.1 (DNS rebinding) and then read the dashboard as its own origin.
Its requests still carry that name in their ``Host`` header, so the app
answers only a ``Host`` that is a loopback name or address (``127.0.0.1``,
``localhost``, ``[::1]``), the ``--host`` the server was started with, or
the address the connection actually arrived at (the ASGI ``server`` of the
request: for ``--host 0.0.0.0``, the machine's own address the client
dialled). Anything else gets 403, with or without a port.

Served on every address (``--host 0.0.0.0`` or ``::``), the dashboard also
answers the names :func:`machine_names` gives, the ones its banner prints
for colleagues: this machine's host name (and its full name) and its
non-loopback addresses.
"""

from __future__ import annotations

import ipaddress
import json
import socket
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


def _usable(address: str) -> bool:
    """Whether a colleague could open a URL of this address: not loopback, unspecified, link-local or multicast."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    return not (ip.is_loopback or ip.is_unspecified or ip.is_link_local or ip.is_multicast)


def _interface_addresses() -> list[str]:
    """The addresses of this machine's network interfaces (psutil's list when installed, else those the
    host name resolves to and the ones outgoing traffic would leave from)."""
    found: list[str] = []
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        try:
            for addrs in psutil.net_if_addrs().values():
                found += [a.address.split("%")[0] for a in addrs if a.family in (socket.AF_INET, socket.AF_INET6)]
            return found
        except OSError:
            pass
    try:
        found += [str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None)]
    except OSError:
        pass
    # Connecting a datagram socket sends nothing; it picks the address a packet to there would leave from.
    for family, target in ((socket.AF_INET, "192.0.2.1"), (socket.AF_INET6, "2001:db8::1")):
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                s.connect((target, 9))
                found.append(str(s.getsockname()[0]))
        except OSError:
            continue
    return found


def machine_names(ipv6: bool = True) -> list[str]:
    """This machine's host name, its full name (when it has one) and its non-loopback addresses, in that order.

    What a colleague on the network can put in a URL to reach a dashboard served on every address.

    :param ipv6: include IPv6 addresses (a server on ``0.0.0.0`` takes IPv4 only).
    """
    out: list[str] = []

    def add(name: str) -> None:
        name = name.strip().rstrip(".")
        if name and name.lower() not in LOOPBACK and name not in out:
            out.append(name)

    host = socket.gethostname()
    add(host)
    if "." not in host:
        try:
            full = socket.getfqdn(host)
        except OSError:
            full = ""
        if "." in full and not full.startswith("localhost"):
            add(full)
    addresses = [a for a in _interface_addresses() if _usable(a)]
    for a in sorted(set(addresses), key=lambda a: (ipaddress.ip_address(a).version, addresses.index(a))):
        if ipv6 or ipaddress.ip_address(a).version == 4:
            add(a)
    return out


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
                                    "localhost (or the --host it was started with, or a URL its banner "
                                    "printed)"}).encode()
        await send({"type": "http.response.start", "status": 403,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"cache-control", b"no-store")]})
        await send({"type": "http.response.body", "body": body})


__all__ = ["LOOPBACK", "HostCheck", "allowed", "host_name", "machine_names"]
