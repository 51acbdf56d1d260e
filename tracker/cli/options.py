"""What the commands share: options, error handling, progress bars, times and ids."""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NoReturn, TextIO

import click

from ..bus import TrackerWarning
from ..errors import TrackerError
from .render import FORMATS

#: Work smaller than this many bytes finishes too fast to deserve a progress bar.
PROGRESS_MIN_BYTES = 1 << 20
#: Short ids are at least this long, longer where needed to stay unique (like git).
SHORT_ID_LEN = 8


def format_option(choices: tuple[str, ...] = FORMATS, default: str = "table") -> Any:
    """The ``--format`` option of a reading command."""
    return click.option("--format", "fmt", type=click.Choice(choices), default=default, show_default=True,
                        help="Output format.")


def schema_option(help: str = "Only records of this schema.") -> Any:  # noqa: A002 - click's own name
    """The ``--schema`` option."""
    return click.option("--schema", metavar="NAME", help=help)


def one_line(text: str) -> str:
    """A possibly multi-line message as one line."""
    return "; ".join(part.strip() for part in str(text).splitlines() if part.strip())


def fail(message: str, code: int = 1) -> NoReturn:
    """Print ``tracker: message`` on stderr as one line and exit with ``code``."""
    click.echo(f"tracker: {one_line(message)}", err=True)
    sys.exit(code)


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: TextIO | None = None, line: str | None = None) -> None:
    text = one_line(str(message))
    if not text.startswith("tracker:"):
        text = f"tracker: {text}"
    if not text.startswith("tracker: warning"):
        text = text.replace("tracker:", "tracker: warning:", 1)
    click.echo(text, err=True)


def _silence_stdout() -> None:
    # The reader went away (``tracker runs | head``): send the rest to /dev/null
    # so that flushing at exit does not raise a second time.
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def handle_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run a command with tracker errors as one line on stderr (exit 1), never a traceback.

    Warnings of readers and plugins are printed as one ``tracker: warning:`` line each.
    A closed pipe on stdout ends the command quietly.
    """

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("always", TrackerWarning)
            warnings.showwarning = _show_warning
            try:
                return fn(*args, **kwargs)
            except TrackerError as exc:
                fail(str(exc))
            except BrokenPipeError:
                _silence_stdout()
                sys.exit(0)
            except OSError as exc:
                where = f"{exc.filename}: " if exc.filename else ""
                fail(f"{where}{exc.strerror or exc}")

    return wrapper


def require_schema(host: Any, name: str) -> Any:
    """The compiled schema ``name``.

    :raises TrackerError: naming the unknown schema and the known ones.
    """
    compiled = host.schemas.get(name)
    if compiled is None:
        known = ", ".join(sorted(host.schemas)) or "none"
        raise TrackerError(f"unknown schema {name!r} (known schemas: {known})")
    return compiled


# --- terminal --------------------------------------------------------------------------------

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


STATUS_COLORS = {"finished": "green", "running": "cyan", "failed": "red", "crashed": "magenta"}


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


# --- values ------------------------------------------------------------------------------------

def when(ts: float | None) -> str:
    """A timestamp as local date and time."""
    if ts is None:
        return "-"
    return _dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


def clock(ts: float | None) -> str:
    """A timestamp as local time of day with milliseconds."""
    if ts is None:
        return "-"
    return _dt.datetime.fromtimestamp(ts).strftime("%H:%M:%S.%f")[:-3]


def duration(seconds: float | None) -> str:
    """Seconds as ``32ms``, ``4.2s``, ``3m05s``, ``1h02m`` or ``2d07h``."""
    if seconds is None:
        return "-"
    if seconds < 1:
        return f"{max(seconds, 0.0) * 1000:.0f}ms"
    if seconds < 60:
        return f"{max(seconds, 0.0):.1f}s"
    m, s = divmod(int(seconds), 60)
    if m < 60:
        return f"{m}m{s:02d}s"
    h, m = divmod(m, 60)
    if h < 48:
        return f"{h}h{m:02d}m"
    d, h = divmod(h, 24)
    return f"{d}d{h:02d}h"


def run_duration(info: Any) -> float | None:
    """A run's duration; for a running run, from its start until now."""
    if info.status == "running" and info.created_at is not None:
        return time.time() - info.created_at
    return info.duration


def short_ids(ids: Iterable[str], min_len: int = SHORT_ID_LEN) -> dict[str, str]:
    """The shortest prefix of each id (at least ``min_len``) that no other id shares."""
    ordered = sorted(set(ids))

    def common(a: str, b: str) -> int:
        n = 0
        for x, y in zip(a, b, strict=False):
            if x != y:
                break
            n += 1
        return n

    out = {}
    for i, rid in enumerate(ordered):
        need = 0
        if i > 0:
            need = common(rid, ordered[i - 1]) + 1
        if i + 1 < len(ordered):
            need = max(need, common(rid, ordered[i + 1]) + 1)
        out[rid] = rid[:max(min_len, need)]
    return out


def flatten(d: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Nested dicts as ``("a.b", value)`` pairs, in order."""
    out: list[tuple[str, Any]] = []
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out += flatten(v, f"{prefix}{k}.")
        else:
            out.append((f"{prefix}{k}", v))
    return out
