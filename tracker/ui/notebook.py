"""``tracker.show``: the dashboard inside a notebook cell.

``tracker.show()`` starts (once per store) a dashboard server on 127.0.0.1 in
a background thread and returns a :class:`Dashboard`, whose ``_repr_html_``
is an iframe of the page of what was asked for: the runs page of a store, a
run's page, or the compare page of several runs. A notebook cell that ends
in it shows the page.

The served pages may be framed by a notebook on this machine (its page is
on ``localhost`` / ``127.0.0.1``, or a VS Code webview); the dashboard that
``tracker ui`` serves still refuses every frame.
"""

from __future__ import annotations

import html
import os
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

__all__ = ["Dashboard", "show", "stop_all"]

#: Who may frame the notebook's dashboard: pages of this machine (Jupyter, JupyterLab) and VS Code's webviews.
FRAME_ANCESTORS = (b"'self' http://localhost:* http://127.0.0.1:* https://localhost:* "
                   b"https://127.0.0.1:* vscode-webview:")

_servers: dict[str, Any] = {}
_lock = threading.Lock()


class _Server:
    """uvicorn serving one store's dashboard on a free loopback port, in a daemon thread."""

    def __init__(self, store: Any) -> None:
        import socket

        import uvicorn

        from tracker.ui import create_app

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        app = create_app(store, frame_ancestors=FRAME_ANCESTORS)
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning",
                                                    access_log=False, timeout_graceful_shutdown=1))
        # uvicorn must not take over the notebook kernel's signal handlers.
        self.server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
        self.thread = threading.Thread(target=self.server.run, name=f"tracker-ui-{self.port}", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                from tracker.core.errors import TrackerError

                raise TrackerError(f"the dashboard server for {store} did not start on 127.0.0.1:{self.port}")
            time.sleep(0.02)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


class Dashboard:
    """A page of the dashboard, shown in a notebook as an iframe (``_repr_html_``).

    :ivar url: the page's address (served on 127.0.0.1 by this process).
    :ivar height: the iframe's height in pixels.
    """

    def __init__(self, url: str, height: int) -> None:
        self.url = url
        self.height = height

    def _repr_html_(self) -> str:
        src = html.escape(self.url, quote=True)
        return (f'<iframe src="{src}" width="100%" height="{int(self.height)}" frameborder="0" '
                f'style="border:1px solid #d9dce1;border-radius:6px" title="tracker dashboard"></iframe>')

    def __repr__(self) -> str:
        return f"Dashboard({self.url!r})"


def _store_and_path(target: Any) -> tuple[Any, str]:
    """The store to serve and the page's path for ``target`` (see :func:`show`)."""
    from tracker.core.errors import TrackerError
    from tracker.store import Store, open_store

    if target is None:
        return open_store(), "/"
    if isinstance(target, (str, os.PathLike)):
        return Store(target), "/"
    if isinstance(target, Store):
        return target, "/"
    if hasattr(target, "id") and hasattr(target, "store"):  # a Run or a RunView
        return Store(target.store), f"/runs/{quote(str(target.id))}"
    if isinstance(target, Sequence) and target and all(hasattr(t, "id") and hasattr(t, "store") for t in target):
        stores = {str(Path(t.store).resolve()) for t in target}
        if len(stores) > 1:
            raise TrackerError(f"tracker.show: the runs are in {len(stores)} stores; expected runs of one store")
        if len(target) == 1:
            return Store(target[0].store), f"/runs/{quote(str(target[0].id))}"
        return Store(target[0].store), "/compare?runs=" + ",".join(quote(str(t.id)) for t in target)
    raise TrackerError(f"tracker.show: expected a store path, a Store, a run or a list of runs, "
                       f"given {type(target).__name__}")


def show(target: Any = None, height: int = 600) -> Dashboard:
    """The dashboard of ``target`` for a notebook cell (the cell shows it when it ends in the result).

    :param target: ``None`` (the default store: the runs page), a store folder or :class:`tracker.Store`
        (its runs page), a :class:`tracker.Run` or :class:`tracker.RunView` (its page), or a list of runs
        of one store (their compare page).
    :param height: the iframe's height in pixels.
    :raises tracker.TrackerError: for a target of another kind, runs of several stores, or when the
        ``ui`` extra is not installed.
    """
    from tracker.ui import create_app  # noqa: F401 - raises the one-line install hint without the extra

    try:
        import uvicorn  # noqa: F401
    except ImportError:
        from tracker.core.errors import TrackerError

        raise TrackerError('tracker.show needs the ui extra: pip install "tracker-core[ui]"') from None
    if isinstance(height, bool) or not isinstance(height, int) or height < 100:
        from tracker.core.errors import TrackerError

        raise TrackerError(f"tracker.show: height: expected an int of at least 100 (pixels), given {height!r}")
    store, path = _store_and_path(target)
    key = str(Path(store.path).resolve())
    with _lock:
        server = _servers.get(key)
        if server is None or not server.thread.is_alive():
            server = _servers[key] = _Server(store)
    return Dashboard(server.url + path, height)


def stop_all() -> None:
    """Stop every server :func:`show` started in this process."""
    with _lock:
        for server in _servers.values():
            server.stop()
        _servers.clear()
