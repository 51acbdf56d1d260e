"""Delivery in the background: one sender thread per process, retries with backoff, never an exception out.

``submit`` only puts the alert on a queue and returns, so neither
``run.alert`` nor ``log`` waits on the network. The thread starts with the
first alert and ends once the queue has been empty for a moment, so no thread
of the tracker outlives the last alert of its process. A channel that keeps
failing is reported as a one-line warning on stderr after its last attempt.
"""

from __future__ import annotations

import atexit
import queue
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from tracker.alerts.channels import Alert, Channel, ChannelError

#: Seconds the sender waits for more work before its thread ends.
IDLE = 1.0
MAX_BACKOFF = 60.0


class Sender:
    """The process's delivery queue and its thread.

    :param retries: attempts after the first; ``backoff`` seconds before the
        first retry, doubling after each (at most a minute).
    :param report: called with a one-line message when a delivery is given up.
    """

    def __init__(self, retries: int = 5, backoff: float = 1.0,
                 report: Callable[[str], None] | None = None) -> None:
        self.retries = retries
        self.backoff = backoff
        self.report = report or _stderr
        self._queue: queue.Queue[tuple[Alert, Channel, int, int, float]] = queue.Queue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pending = 0
        self._idle = threading.Condition(self._lock)
        #: (channel name, alert title, outcome) of every finished delivery: "sent" or the last error.
        self.log: list[tuple[str, str, str]] = []

    def submit(self, alert: Alert, channels: list[Channel], retries: int | None = None,
               backoff: float | None = None) -> None:
        """Queue ``alert`` for each channel; returns at once.

        :param retries: attempts after the first (default: the sender's).
        :param backoff: seconds before the first retry, doubling (default: the sender's).
        """
        r = self.retries if retries is None else retries
        b = self.backoff if backoff is None else backoff
        with self._lock:
            for ch in channels:
                self._pending += 1
                self._queue.put((alert, ch, 0, r, b))
            if channels and (self._thread is None or not self._thread.is_alive()):
                self._thread = threading.Thread(target=self._loop, name="tracker-alerts", daemon=True)
                self._thread.start()

    def pending(self) -> int:
        """Deliveries not finished yet (waiting, being sent, or waiting to retry)."""
        with self._lock:
            return self._pending

    def flush(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for every queued delivery to finish; whether they did."""
        deadline = time.monotonic() + timeout
        with self._idle:
            while self._pending:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    def _loop(self) -> None:
        waiting: list[tuple[float, tuple[Alert, Channel, int, int, float]]] = []  # retries, by due time
        while True:
            if waiting and waiting[0][0] <= time.monotonic():  # a due retry goes before new work
                job = waiting.pop(0)[1]
            else:
                timeout = max(0.0, waiting[0][0] - time.monotonic()) if waiting else IDLE
                try:
                    job = self._queue.get(timeout=timeout)
                except queue.Empty:
                    with self._lock:
                        if not waiting and self._queue.empty():
                            self._thread = None
                            return
                    continue
            retry_at = self._attempt(*job)
            if retry_at is not None:
                alert, ch, attempt, retries, backoff = job
                waiting.append((retry_at, (alert, ch, attempt + 1, retries, backoff)))
                waiting.sort(key=lambda w: w[0])

    def _attempt(self, alert: Alert, ch: Channel, attempt: int, retries: int, backoff: float) -> float | None:
        """Send once; the time of the next attempt, or ``None`` when this delivery is over."""
        try:
            ch.send(alert)
            outcome = "sent"
        except Exception as exc:  # noqa: BLE001 - a channel never raises into the process that alerts
            permanent = isinstance(exc, ChannelError) and exc.permanent
            if not permanent and attempt < retries:
                return time.monotonic() + min(MAX_BACKOFF, backoff * 2 ** attempt)
            outcome = str(exc) if isinstance(exc, ChannelError) else f"{type(exc).__name__}: {exc}"
            tries = attempt + 1
            self.report(f"tracker: warning: alert {alert.title!r} of run {alert.run_label} not delivered to "
                        f"channel {getattr(ch, 'name', ch)!r} after {tries} attempt{'s' if tries > 1 else ''}: "
                        f"{outcome}")
        with self._idle:
            self.log.append((getattr(ch, "name", str(ch)), alert.title, outcome))
            self._pending -= 1
            self._idle.notify_all()
        return None


def _stderr(message: str) -> None:
    try:
        print(message, file=sys.stderr, flush=True)
    except (OSError, ValueError):  # stderr closed: nothing more to do
        pass


_sender: Sender | None = None
_sender_lock = threading.Lock()
_FINISH_TIMEOUT = [10.0]


def get_sender(alerts: dict[str, Any]) -> Sender:
    """The process's sender; ``[alerts] finish_timeout`` of the latest caller's configuration applies at exit."""
    global _sender
    with _sender_lock:
        if _sender is None:
            _sender = Sender()
            atexit.register(_flush_at_exit)
        _FINISH_TIMEOUT[0] = float(alerts.get("finish_timeout", 10.0))
        return _sender


def _flush_at_exit() -> None:
    # A script that alerts on its last line still delivers: its process waits for
    # the queue, at most [alerts] finish_timeout seconds.
    if _sender is not None:
        _sender.flush(_FINISH_TIMEOUT[0])
