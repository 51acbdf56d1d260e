"""The options every reading command shares (``--format``, ``--schema``) and its error handling."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any, NoReturn, TextIO

import click

from tracker.cli.render import FORMATS
from tracker.core.errors import TrackerError
from tracker.host.bus import TrackerWarning


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


def show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                 file: TextIO | None = None, line: str | None = None) -> None:
    """Print a warning as one ``tracker: warning: ...`` line on stderr (a ``warnings.showwarning``)."""
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
            warnings.showwarning = show_warning
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
