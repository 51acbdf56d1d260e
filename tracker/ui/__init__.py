"""The dashboard: ``tracker ui`` serves :func:`create_app` over a store (optional extra ``tracker-core[ui]``).
Imports the store, integrations and everything below; Starlette only when create_app is called.

Nothing here imports Starlette until :func:`create_app` is called, so
``import tracker.ui`` stays cheap and works without the extra.
"""

from __future__ import annotations

from typing import Any

__all__ = ["create_app"]


def create_app(store: Any = None, *, hosts: tuple[str, ...] = (), frame_ancestors: bytes = b"'none'",
               auth: Any = None, remote: Any = None) -> Any:
    """The dashboard as a Starlette (ASGI) app over ``store``.

    :param store: a :class:`tracker.Store`, a store folder, a ``postgresql://`` URL (the team
        database, docs/team.md), or ``None`` for the store of ``TRACKER_STORE`` / tracker.toml /
        ``./.tracker``.
    :param hosts: names the ``Host`` header may give besides the loopback ones.
    :param frame_ancestors: who may frame the pages (a CSP source list; default: nobody).
    :param auth: who gets in: ``None`` (no login: loopback only), ``"token"``, a users file
        (see :mod:`tracker.ui.auth`), or an ``Auth``.
    :param remote: ``tracker server``'s writing and keys (:class:`tracker.ui.server.Remote`), or ``None``.
    :raises tracker.TrackerError: when Starlette is not installed, naming
        ``pip install "tracker-core[ui]"``.
    """
    try:
        import starlette  # noqa: F401 - only to tell a missing extra apart
    except ImportError:
        from tracker.core.errors import TrackerError

        raise TrackerError('the dashboard needs the ui extra: pip install "tracker-core[ui]"') from None
    from tracker.ui.app import create_app as _create_app

    return _create_app(store, hosts=hosts, frame_ancestors=frame_ancestors, auth=auth, remote=remote)
