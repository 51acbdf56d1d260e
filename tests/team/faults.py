"""A TCP proxy in front of the test PostgreSQL server that can turn into a black hole, as a dropped link does."""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from typing import Any


class Proxy:
    """Forwards ``127.0.0.1:port`` to the server until :meth:`freeze`; then forwards nothing and closes nothing.

    Frozen, it is a link that silently drops packets: the connections it holds stay open and silent
    (for ever, even after :meth:`thaw`), and new connections are accepted but never answered. Thawed, new
    connections are forwarded again.
    """

    def __init__(self, target_port: int) -> None:
        self.target = ("127.0.0.1", target_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.frozen = False
        self.stopped = False
        #: Freeze right after forwarding a client's packet that holds these bytes (see :meth:`freeze_after`).
        self.trigger: bytes | None = None
        self.held: list[socket.socket] = []  # what a black hole keeps open
        self.pairs: list[tuple[socket.socket, socket.socket, dict[str, bool]]] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, server: Any, db: str) -> str:
        """``server``'s URL for database ``db``, through this proxy."""
        return server.url(db).replace(f":{server.port}/", f":{self.port}/")

    def freeze(self) -> None:
        """Stop forwarding, on every connection held now and every new one, without closing any."""
        with self.lock:
            self.frozen = True
            for _, _, state in self.pairs:
                state["dead"] = True

    def freeze_after(self, marker: bytes) -> None:
        """Freeze just after a client's packet holding ``marker`` reached the server: it runs the statement,
        and neither its answer nor anything after it (the COMMIT) gets through."""
        self.trigger = marker

    def thaw(self) -> None:
        """Forward new connections again (the ones held while frozen stay silent)."""
        with self.lock:
            self.frozen = False

    def close(self) -> None:
        """Close everything."""
        self.stopped = True
        with contextlib.suppress(OSError):
            self.listener.close()
        with self.lock:
            socks = list(self.held) + [s for a, b, _ in self.pairs for s in (a, b)]
        for s in socks:
            with contextlib.suppress(OSError):
                s.close()

    def _accept(self) -> None:
        while not self.stopped:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                frozen = self.frozen
                if frozen:
                    self.held.append(client)
                    continue
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            state = {"dead": False}
            with self.lock:
                self.pairs.append((client, upstream, state))
            threading.Thread(target=self._pump, args=(client, upstream, state), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket, state: dict[str, bool]) -> None:
        peer = {a: b, b: a}
        while not self.stopped and not state["dead"]:
            try:
                ready, _, _ = select.select([a, b], [], [], 0.05)
            except (OSError, ValueError):
                return
            if state["dead"]:
                return  # frozen: both sockets stay open, and nothing moves on them any more
            for s in ready:
                try:
                    data = s.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    for x in (a, b):
                        with contextlib.suppress(OSError):
                            x.close()
                    return
                try:
                    peer[s].sendall(data)
                except OSError:
                    return
                if s is a and self.trigger is not None and self.trigger in data:
                    self.trigger = None
                    self.freeze()


def main() -> None:
    """``python -m tests.team.faults PORT``: a proxy to ``127.0.0.1:PORT`` in a process of its own (the benchmarks
    keep its threads out of the process they time). Prints its port; reads ``freeze``, ``thaw``, ``quit``."""
    import sys

    proxy = Proxy(int(sys.argv[1]))
    print(proxy.port, flush=True)
    for line in sys.stdin:
        word = line.strip()
        if word == "freeze":
            proxy.freeze()
        elif word == "thaw":
            proxy.thaw()
        elif word == "quit":
            break
        print("ok", flush=True)
    proxy.close()


if __name__ == "__main__":
    main()
