"""The terminal: whether output goes to one, colours, progress bars."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any, TextIO

import click

#: Work smaller than this many bytes finishes too fast to deserve a progress bar.
PROGRESS_MIN_BYTES = 1 << 20


def is_terminal(stream: TextIO | None = None) -> bool:
    """Whether ``stream`` (default stdout) is an interactive terminal."""
    stream = sys.stdout if stream is None else stream
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def use_color(stream: TextIO | None = None) -> bool:
    """Colour only on a terminal, never with ``NO_COLOR`` set or ``TERM=dumb``."""
    if "NO_COLOR" in os.environ or os.environ.get("TERM") == "dumb":
        return False
    return is_terminal(stream)


def style(text: str, stream: TextIO | None = None, **kwargs: Any) -> str:
    """``click.style(text, **kwargs)`` when colour is on for ``stream``, else ``text``."""
    return click.style(text, **kwargs) if use_color(stream) else text


STATUS_COLORS = {"finished": "green", "running": "cyan", "failed": "red", "crashed": "magenta", "stopped": "yellow"}


def status_text(status: str) -> str:
    """A run status, coloured on a terminal."""
    return style(status, fg=STATUS_COLORS.get(status))


class _NoBar:
    def update(self, n: int) -> None:
        """Nothing to show."""


@contextlib.contextmanager
def progress(total: int, label: str, *, work_bytes: int | None = None,
             output_on_terminal: bool = False) -> Iterator[Any]:
    """A progress bar on stderr over ``total`` units, or a silent stand-in.

    The bar shows only when stderr is a terminal, the work is at least
    :data:`PROGRESS_MIN_BYTES` (``work_bytes``, else ``total`` counts bytes),
    and the command's output does not go to that same terminal.
    """
    size = total if work_bytes is None else work_bytes
    show = total > 0 and size >= PROGRESS_MIN_BYTES and is_terminal(sys.stderr) and not output_on_terminal
    if not show:
        yield _NoBar()
        return
    with click.progressbar(length=total, label=label, file=sys.stderr, width=30,
                           show_eta=True, show_percent=True) as bar:
        yield bar
