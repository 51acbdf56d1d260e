"""Paths that are not files: a FIFO, a socket or a device is refused at once, never read.

Reading a FIFO blocks until some other process writes to it (forever, if
none does); ``/dev/zero`` never ends; opening some devices has effects of its
own. So every function that takes a path to read, or reads a file back from
the store, asks here first: :func:`check_regular` looks at the path without
opening it, :func:`open_regular` opens only a regular file, and without
blocking (``O_NONBLOCK``), then checks again what it opened, so a path
swapped for a FIFO in between is refused too. Both raise
:class:`NotAFileError` naming the path and what it is. :func:`close_quietly`
closes a descriptor where an error must not escape.
"""

from __future__ import annotations

import os
import stat
from typing import IO

try:
    import fcntl
except ImportError:  # not on Windows, which has no FIFOs to open either
    fcntl = None  # type: ignore[assignment]

from tracker.core.errors import TrackerError

_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISREG, "a regular file"),
)


class NotAFileError(TrackerError):
    """A path names a FIFO, a socket, a device or a folder where a regular file was expected.

    :ivar path: the path, as given.
    :ivar kind: what it is (``"a FIFO (named pipe)"``, ``"a socket"``, ...).
    """

    def __init__(self, path: str | os.PathLike[str], kind: str, what: str = "") -> None:
        self.path = os.fspath(path)
        self.kind = kind
        super().__init__(f"{what}{self.path} is {kind}, not a regular file; nothing was read from it")


def kind_of(mode: int) -> str:
    """What a ``st_mode`` says the file is: ``"a regular file"``, ``"a FIFO (named pipe)"``, ``"a socket"``..."""
    for test, text in _KINDS:
        if test(mode):
            return text
    return "a special file"


def check_regular(path: str | os.PathLike[str], what: str = "", *, folder_ok: bool = False) -> os.stat_result:
    """The ``stat`` of ``path`` (symbolic links followed) when it is a regular file.

    Never opens the path, so it never blocks.

    :param what: put before the message (``"log_artifact: "``).
    :param folder_ok: let a folder through as well.
    :raises NotAFileError: anything else, naming what it is.
    :raises OSError: the path cannot be looked at (``FileNotFoundError`` when missing).
    """
    st = os.stat(path)
    if stat.S_ISREG(st.st_mode) or (folder_ok and stat.S_ISDIR(st.st_mode)):
        return st
    raise NotAFileError(path, kind_of(st.st_mode), what)


def open_regular(path: str | os.PathLike[str], what: str = "", *, buffering: int = 0) -> IO[bytes]:
    """``open(path, "rb")`` for a regular file only; never blocks on a FIFO.

    :raises NotAFileError: the path is (or became, while being opened) a FIFO, socket, device or folder.
    :raises OSError: it cannot be opened (``FileNotFoundError`` when missing).
    """
    check_regular(path, what)
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
                     | getattr(os, "O_BINARY", 0))
    except OSError as exc:
        if exc.errno == 6:  # ENXIO: a socket (or a FIFO with no writer, on some systems) swapped in
            raise NotAFileError(path, kind_of(os.stat(path).st_mode), what) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotAFileError(path, kind_of(mode), what)
        if fcntl is not None and _NONBLOCK:
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~_NONBLOCK)
        return os.fdopen(fd, "rb", buffering=buffering)
    except BaseException:
        os.close(fd)
        raise


__all__ = ["NotAFileError", "check_regular", "close_quietly", "kind_of", "open_regular"]


def close_quietly(fd: int | None) -> None:
    """Close file descriptor ``fd`` if there is one, ignoring an error: what a ``close()`` that must not raise
    does with a descriptor it holds (a lock file, a segment, a saved stdout)."""
    if fd is None:
        return
    try:
        os.close(fd)
    except OSError:
        pass


def not_a_file(path: str | os.PathLike[str]) -> str | None:
    """What ``path`` is when it is not a regular file (``"a FIFO"``, ``"a folder"``...), else ``None``.

    Checked before a file is opened: opening a FIFO would block forever.
    """
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "missing (a broken symlink?)"
    except OSError as exc:
        return f"unreadable ({exc.strerror})"
    if stat.S_ISREG(mode):
        return None
    for test, what in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return what
    return "not a regular file"


def fsync_folder(path: str | os.PathLike[str]) -> None:
    """Flush a folder's entries to the disk (a new or renamed file survives a power loss only then)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
