"""API keys at the door of ``tracker server``: ``Authorization: Bearer trk_<id>_<secret>``.

:class:`KeyGate` sits in front of the login middleware (:mod:`tracker.ui.auth`).
A request that carries a key has it checked against the served store's key
store (:mod:`tracker.remote.keys`): a valid one is let through whatever the
``--auth`` mode (the key opens the dashboard's API too, unless it is limited to
some projects: the dashboard answers for every project) and its info goes
into the ASGI scope as ``scope["tracker.key"]`` for the routes to check its
scope and projects; anything else is a 401 naming why (unknown, revoked,
expired: by the key's id, never its secret). ``/api/v1/`` always needs a key
(but for ``/api/v1/openapi.json``, a document of the API that holds nothing
of the store). Failed checks count per client address: after
:data:`KEY_FAILURES` in :data:`FAILURE_WINDOW` seconds the address gets 429
with ``Retry-After`` before any check.

Plain ASGI; Starlette's dependency anyio runs a key check that asks the
database off the event loop.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from tracker.ui.sessions import FAILURE_WINDOW, FailureLimit

log = logging.getLogger(__name__)

#: Failed key checks an address may make within :data:`FAILURE_WINDOW` seconds before it gets 429.
KEY_FAILURES = 10
#: The scope entry that holds the checked key's :class:`tracker.remote.keys.KeyInfo`.
SCOPE_KEY = "tracker.key"
#: Set in the scope of a request that needs no login (the API's description).
SCOPE_PUBLIC = "tracker.public"
#: Paths answered without a key or a login.
PUBLIC = ("/api/v1/openapi.json",)
V1 = "/api/v1/"


def bearer(scope: dict) -> str | None:
    """The credential of an ``Authorization: Bearer ...`` header, or ``None``."""
    for k, v in scope.get("headers") or ():
        if k == b"authorization":
            kind, _, value = v.decode("latin-1").partition(" ")
            return value.strip() if kind.lower() == "bearer" else None
    return None


async def send_json(send: Any, status: int, doc: dict[str, Any], headers: list[tuple[bytes, bytes]] | None = None
                    ) -> None:
    """Answer ``doc`` as JSON with ``status`` (never cached)."""
    body = json.dumps(doc).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"cache-control", b"no-store"), *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


class KeyGate:
    """ASGI middleware checking API keys (see the module's docstring).

    :param keys: the served store's :class:`tracker.remote.keys.KeyStore`.
    :param limit: the failure limit per address (default: :data:`KEY_FAILURES` a minute).
    """

    def __init__(self, app: Any, keys: Any, limit: FailureLimit | None = None) -> None:
        self.app = app
        self.keys = keys
        self.limit = limit or FailureLimit(KEY_FAILURES, FAILURE_WINDOW)

    @staticmethod
    def _address(scope: dict) -> str:
        client = scope.get("client")
        return str(client[0]) if client else "unknown"

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        given = bearer(scope)
        is_key = given is not None and given.startswith("trk_")
        if path in PUBLIC:
            scope[SCOPE_PUBLIC] = True
            await self.app(scope, receive, send)
            return
        if not is_key:
            if path.startswith(V1) and scope["type"] == "http":
                await send_json(send, 401, {"error": "an API key is needed: send Authorization: Bearer trk_... "
                                                     "(`tracker keys create` makes one)"},
                                [(b"www-authenticate", b'Bearer realm="tracker"')])
                return
            await self.app(scope, receive, send)  # the dashboard's own way in (a session, a token, loopback)
            return
        address = self._address(scope)
        wait = self.limit.wait(address)
        if wait:
            await self._refuse(scope, send, 429, f"too many failed key checks from this address: try again in "
                                                 f"{wait} s", [(b"retry-after", str(wait).encode())])
            return
        from anyio import to_thread

        from tracker.core.errors import StoreUnavailable, TrackerError
        from tracker.remote.keys import KeyRefused

        try:
            info = await to_thread.run_sync(self.keys.check, given)
        except KeyRefused as exc:
            self.limit.failed(address)
            log.warning("tracker server: refused a key from %s: %s", address, exc)
            await self._refuse(scope, send, 401, str(exc),
                               [(b"www-authenticate", b'Bearer realm="tracker", error="invalid_token"')])
            return
        except StoreUnavailable as exc:
            await self._refuse(scope, send, 503, str(exc), [(b"retry-after", b"5")])
            return
        except TrackerError as exc:
            await self._refuse(scope, send, 500, f"the key store cannot be read: {exc}")
            return
        if info.projects and not path.startswith(V1):
            # The dashboard's own API answers for every project: a key limited to some opens /api/v1/ only.
            await self._refuse(scope, send, 403, f"API key {info.id} ({info.name}) is limited to projects "
                                                 f"{', '.join(map(repr, info.projects))}: it opens /api/v1/ only, "
                                                 "not the dashboard")
            return
        scope[SCOPE_KEY] = info
        await self.app(scope, receive, send)

    @staticmethod
    async def _refuse(scope: dict, send: Any, status: int, message: str,
                      headers: list[tuple[bytes, bytes]] | None = None) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await send_json(send, status, {"error": message}, headers)


__all__ = ["KEY_FAILURES", "PUBLIC", "SCOPE_KEY", "SCOPE_PUBLIC", "KeyGate", "bearer", "send_json"]
