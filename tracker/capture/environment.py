"""The environment: what a run's process ran on, recorded once at its start in a background thread.

:func:`collect` gathers Python, platform, CPU, memory, GPUs (NVML when
present; torch's CUDA version only when torch is already imported), the
installed distributions (``name==version``, sorted, stored as one blob, so
runs with the same packages share it), the command and working directory,
and git: the remote with its credentials taken out, branch, commit, the dirty
flag and ``git diff HEAD`` as a blob, cut at ``[run] max_diff_bytes``. Git has
two seconds in all; a missing, broken or slow git is one line in the record's
``warnings`` (and on stderr). Environment variables are never read into the
record: nothing here copies ``os.environ``.

:class:`EnvironmentRecorder` runs it on a daemon thread and writes the
``environment`` record (blobs first), then, with ``[run] code``, the files the
patterns match as a folder artifact named ``code``.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tracker.core.urls import redact_urls
from tracker.core.values import storable
from tracker.read.liveness import hostname

#: Seconds git may take in all (every command together) before it is called slow.
GIT_TIMEOUT = 2.0
#: The most files and bytes ``[run] code`` stores.
CODE_MAX_FILES = 10_000
CODE_MAX_BYTES = 100 * 1024 * 1024
#: Folders never walked for ``[run] code`` outside a git repository.
_SKIP_DIRS = {".git", ".hg", ".svn", ".tracker", ".venv", "venv", "env", "node_modules", "__pycache__",
              ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".nox", "build", "dist"}


# --- packages -----------------------------------------------------------------------------------

_packages_cache: dict[tuple, list[str]] = {}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _path_key() -> tuple:
    key = []
    for entry in sys.path:
        try:
            key.append((entry, os.stat(entry or ".").st_mtime_ns))
        except OSError:
            key.append((entry, None))
    return tuple(key)


def installed_packages() -> list[str]:
    """The distributions importable from ``sys.path``: ``name==version`` (canonical names), sorted.

    Read from the ``.dist-info`` and ``.egg-info`` folder names (their metadata only where the name
    holds no version), the first of a name on ``sys.path`` winning as it does for imports. Cached
    until a folder on ``sys.path`` changes.
    """
    key = _path_key()
    cached = _packages_cache.get(key)
    if cached is not None:
        return cached
    found: dict[str, str] = {}
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:
            continue
        for fname in names:
            if fname.endswith(".dist-info"):
                stem = fname[:-10]
            elif fname.endswith(".egg-info"):
                stem = fname[:-9]
            else:
                continue
            name, _, version = stem.partition("-")
            if fname.endswith(".egg-info"):
                version = version.split("-py")[0]
            if not version:
                name, version = _metadata_name_version(os.path.join(entry or ".", fname), name)
            canonical = _canonical(name)
            if canonical and canonical not in found:
                found[canonical] = version
    out = sorted(f"{n}=={v}" for n, v in found.items())
    _packages_cache.clear()
    _packages_cache[key] = out
    return out


def _metadata_name_version(path: str, name: str) -> tuple[str, str]:
    """Name and version from a metadata file's headers (an ``.egg-info`` named without a version)."""
    meta = os.path.join(path, "PKG-INFO") if os.path.isdir(path) else path
    if not os.path.isfile(meta):
        meta = os.path.join(path, "METADATA")
    version = ""
    try:
        with open(meta, encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    break
                if line.startswith("Name:"):
                    name = line[5:].strip() or name
                elif line.startswith("Version:"):
                    version = line[8:].strip()
    except OSError:
        pass
    return name, version or "unknown"


# --- machine ------------------------------------------------------------------------------------

def _cpu_model() -> str:
    import platform

    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith(("model name", "Model", "Hardware")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        try:
            import psutil

            return int(psutil.virtual_memory().total)
        except Exception:  # noqa: BLE001 - no way to tell here
            return None


def gpu_facts(nvml: Any = None) -> dict[str, Any]:
    """GPUs, driver and CUDA versions: NVML when present (or given), torch's CUDA only if torch is imported."""
    out: dict[str, Any] = {"gpus": [], "gpu_driver": None, "cuda": None}
    nv = nvml
    started = False
    if nv is None:
        try:
            import pynvml as nv

            nv.nvmlInit()
            started = True
        except Exception:  # noqa: BLE001 - no nvidia-ml-py, no driver, no GPU
            nv = None
    if nv is not None:
        try:
            driver = _try(nv.nvmlSystemGetDriverVersion)
            out["gpu_driver"] = driver.decode() if isinstance(driver, bytes) else driver
            cuda = _try(nv.nvmlSystemGetCudaDriverVersion_v2) or _try(nv.nvmlSystemGetCudaDriverVersion)
            if isinstance(cuda, int) and cuda > 0:
                out["cuda"] = f"{cuda // 1000}.{cuda % 1000 // 10}"
            for i in range(_try(nv.nvmlDeviceGetCount) or 0):
                h = _try(lambda i=i: nv.nvmlDeviceGetHandleByIndex(i))
                if h is None:
                    continue
                name = _try(lambda h=h: nv.nvmlDeviceGetName(h))
                mem = _try(lambda h=h: nv.nvmlDeviceGetMemoryInfo(h))
                out["gpus"].append({"index": i, "name": name.decode() if isinstance(name, bytes) else (name or ""),
                                    "memory_total_bytes": getattr(mem, "total", None)})
        finally:
            if started:
                _try(nv.nvmlShutdown)
    torch = sys.modules.get("torch")
    if torch is not None:
        cuda = getattr(getattr(torch, "version", None), "cuda", None)
        if isinstance(cuda, str) and out["cuda"] is None:
            out["cuda"] = cuda
    return out


def _try(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception:  # noqa: BLE001 - one fact that cannot be read is left out
        return None


# --- git ----------------------------------------------------------------------------------------

_SCHEME_USERINFO = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/?#@]*@")


def clean_remote(url: str) -> str:
    """A git remote URL without credentials: ``https://user:token@host/x`` -> ``https://host/x``.

    Any user part of a URL with a scheme is taken out (a token is often the user name alone);
    an ``ssh``-style ``git@host:org/x`` keeps its user, which is no secret. A password or token
    in the query string is masked as :func:`tracker.core.urls.redact_urls` masks it.
    """
    url = url.strip()
    m = _SCHEME_USERINFO.match(url)
    if m is not None and not url.startswith(("ssh://", "git+ssh://", "ssh+git://")):
        url = m["scheme"] + url[m.end():]
    elif m is not None:
        # ssh://user:password@host: the user stays, a password never does
        url = re.sub(r"^(ssh://|git\+ssh://|ssh\+git://)([^/?#@:]*):[^/?#@]*@", r"\1\2@", url)
    return redact_urls(url)


def git_root(start: Path) -> Path | None:
    """The folder holding ``.git`` at or above ``start``, if any."""
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return None


class _Git:
    """Runs git in one repository within one deadline; the first problem becomes the warning."""

    def __init__(self, root: Path, deadline: float, git: str) -> None:
        self.root = root
        self.deadline = deadline
        self.git = git
        self.problem: str | None = None

    def run(self, *args: str, ok: tuple[int, ...] = (0,)) -> bytes | None:
        import subprocess  # imported here, on the recorder's thread: start_run does not wait for it

        if self.problem is not None:
            return None
        left = self.deadline - time.monotonic()
        if left <= 0:
            self.problem = f"git is slow: no answer within {GIT_TIMEOUT:g} s; git facts left out"
            return None
        # Only what git needs to behave the same for everyone; the environment is passed, not recorded.
        env = dict(os.environ, GIT_OPTIONAL_LOCKS="0", GIT_TERMINAL_PROMPT="0", LC_ALL="C")
        try:
            out = subprocess.run([self.git, "-C", str(self.root), *args], capture_output=True, timeout=left,
                                 stdin=subprocess.DEVNULL, env=env, check=False)
        except subprocess.TimeoutExpired:
            self.problem = f"git is slow: no answer within {GIT_TIMEOUT:g} s; git facts left out"
            return None
        except OSError as exc:
            self.problem = f"git cannot run: {exc.strerror or exc}; git facts left out"
            return None
        if out.returncode not in ok:
            first = out.stderr.decode("utf-8", "replace").strip().splitlines()[:1]
            self.problem = (f"git failed in {self.root}: {first[0] if first else f'exit code {out.returncode}'}; "
                            "git facts left out")
            return None
        return out.stdout


def git_facts(cwd: Path, max_diff_bytes: int, put_blob: Callable[[bytes], str] | None,
              timeout: float = GIT_TIMEOUT) -> tuple[dict[str, Any], list[str]]:
    """Git facts of the repository holding ``cwd``: ``(fields, warnings)``.

    :param put_blob: stores the diff's bytes, returning their sha256 (``None``: the diff is not kept).
    """
    out: dict[str, Any] = {}
    root = git_root(cwd)
    if root is None:
        return out, []
    out["git_root"] = str(root)
    exe = shutil.which("git")
    if exe is None:
        return out, [f"git is not installed: the repository at {root} is not described (commit, diff)"]
    g = _Git(root, time.monotonic() + timeout, exe)
    head = g.run("rev-parse", "--verify", "-q", "HEAD", ok=(0, 1))
    if head is None:
        return out, [g.problem or ""]
    commit = head.decode().strip() or None
    out["git_commit"] = commit
    branch = g.run("rev-parse", "--abbrev-ref", "HEAD", ok=(0, 128)) if commit else None
    if branch is not None:
        b = branch.decode("utf-8", "replace").strip()
        out["git_branch"] = None if b in ("", "HEAD") else b
    remotes = g.run("config", "--get-regexp", r"^remote\..*\.url$", ok=(0, 1))
    if remotes:
        urls = {}
        for line in remotes.decode("utf-8", "replace").splitlines():
            key, _, url = line.partition(" ")
            urls[key[len("remote."):-len(".url")]] = url
        url = urls.get("origin") or next(iter(urls.values()), None)
        if url:
            out["git_remote"] = clean_remote(url)
    if commit is not None:
        diff = g.run("diff", "HEAD", "--no-color", "--no-ext-diff", "--no-textconv")
        if diff is not None:
            out["git_dirty"] = bool(diff)
            out["git_files_changed"] = diff.count(b"diff --git ")
            lines = diff.split(b"\n")
            out["git_insertions"] = sum(1 for ln in lines if ln.startswith(b"+") and not ln.startswith(b"+++"))
            out["git_deletions"] = sum(1 for ln in lines if ln.startswith(b"-") and not ln.startswith(b"---"))
            out["git_diff_bytes"] = len(diff)
            if diff and put_blob is not None:
                kept = diff
                if len(diff) > max_diff_bytes:
                    cut = diff.rfind(b"\n", 0, max_diff_bytes) + 1
                    kept = diff[:cut] + (f"# tracker: the diff is cut at {cut} of its {len(diff)} bytes "
                                         "([run] max_diff_bytes)\n").encode()
                    out["git_diff_truncated"] = True
                out["git_diff"] = put_blob(kept)
    return out, [g.problem] if g.problem else []


# --- the whole record ---------------------------------------------------------------------------

def collect(*, max_diff_bytes: int = 10 * 1024 * 1024, put_blob: Callable[[bytes], str] | None = None,
            nvml: Any = None, git_timeout: float = GIT_TIMEOUT) -> dict[str, Any]:
    """The ``environment`` record's fields for this process (blobs stored through ``put_blob``).

    Never raises for a fact that cannot be read: it is left out, and git's problems are warnings.
    """
    import platform

    warnings: list[str] = []
    try:
        cwd: Path | None = Path.cwd()
    except OSError:
        cwd = None
    data: dict[str, Any] = {
        "python": platform.python_version(), "implementation": platform.python_implementation(),
        "executable": sys.executable or "", "platform": platform.platform(), "machine": platform.machine(),
        "host": hostname(), "cpu": _cpu_model(), "cpu_count": os.cpu_count(), "memory_bytes": _memory_bytes(),
        "command": redact_urls([sys.executable or "python", *sys.argv]), "cwd": str(cwd) if cwd else None,
    }
    data.update(gpu_facts(nvml))
    try:
        packages = installed_packages()
    except Exception as exc:  # noqa: BLE001 - an unreadable site-packages: named, the rest goes on
        packages = []
        warnings.append(f"installed packages could not be listed: {exc}")
    data["packages_count"] = len(packages)
    if packages and put_blob is not None:
        data["packages"] = put_blob(("\n".join(packages) + "\n").encode())
    if cwd is not None:
        git, problems = git_facts(cwd, max_diff_bytes, put_blob, git_timeout)
        data.update(git)
        warnings.extend(problems)
    data["warnings"] = warnings
    return storable(data)


def code_files(root: Path, patterns: tuple[str, ...], git_listing: list[str] | None = None) -> list[str]:
    """The files under ``root`` that ``patterns`` match, relative, sorted.

    A pattern without ``/`` matches a file name at any depth (``*.py``); one with ``/`` is anchored at
    ``root`` (``configs/**`` is everything under ``configs``). ``git_listing`` (tracked and unignored
    files) is used when given; otherwise the folder is walked, skipping hidden and virtualenv folders.
    """
    regexes = [_glob_regex(p) for p in patterns]
    if git_listing is None:
        git_listing = []
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
            rel = os.path.relpath(folder, root)
            for f in files:
                git_listing.append(f if rel == "." else f"{rel}/{f}".replace(os.sep, "/"))
    return sorted({p for p in git_listing if any(r.match(p) for r in regexes)})


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A ``[run] code`` pattern as a regex over ``/``-separated relative paths (``**`` spans folders)."""
    pattern = pattern.strip("/")
    anchored = "/" in pattern
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            c = pattern[i]
            out.append({"*": "[^/]*", "?": "[^/]"}.get(c, re.escape(c)))
            i += 1
    body = "".join(out)
    return re.compile(body + r"\Z" if anchored else r"(?:.*/)?" + body + r"\Z")


class EnvironmentRecorder:
    """Records the environment of ``run`` on a daemon thread; :meth:`wait` lets it end before the run does.

    :param write: ``write(schema, data)`` writes a record at the run's latest step.
    :param put_blob: ``put_blob(data) -> sha256`` stores bytes as a blob (the package list, the diff).
    :param config: the loaded tracker.toml (``max_diff_bytes``, ``run_code``).
    :param log_artifact: ``log_artifact(folder, name)`` for ``[run] code``.
    """

    def __init__(self, write: Callable[[str, dict[str, Any]], Any], put_blob: Callable[[bytes], str], config: Any,
                 log_artifact: Callable[[Path, str], Any] | None = None) -> None:
        self.write = write
        self.put_blob = put_blob
        self.config = config
        self.log_artifact = log_artifact
        self.data: dict[str, Any] | None = None
        self.error: str | None = None
        self.thread = threading.Thread(target=self._run, name="tracker-environment", daemon=True)

    def start(self) -> EnvironmentRecorder:
        self.thread.start()
        return self

    def wait(self, timeout: float = 10.0) -> None:
        """Wait for the record to be written (the run is finishing)."""
        if self.thread.is_alive() and self.thread is not threading.current_thread():
            self.thread.join(timeout)

    def _run(self) -> None:
        # A new thread holds the interpreter until it blocks or its time slice ends (5 ms): it blocks
        # at once, so that start_run, waiting to get the interpreter back, returns without that wait.
        time.sleep(0.005)
        try:
            data = collect(max_diff_bytes=getattr(self.config, "max_diff_bytes", 10 * 1024 * 1024),
                           put_blob=self.put_blob)
            for w in data["warnings"]:
                _warn(w)
            self.data = data
            self.write("environment", data)
            patterns = tuple(getattr(self.config, "run_code", ()) or ())
            if patterns and self.log_artifact is not None:
                self._store_code(data, patterns)
        except Exception as exc:  # noqa: BLE001 - the environment never makes a run fail
            self.error = f"{type(exc).__name__}: {exc}"  # kept on the recorder: a test or a debugger reads it

    def _store_code(self, data: dict[str, Any], patterns: tuple[str, ...]) -> None:
        root = Path(data.get("git_root") or data.get("cwd") or ".")
        listing = None
        if data.get("git_root") and data.get("git_commit") is not None:
            exe = shutil.which("git")
            if exe is not None:
                g = _Git(root, time.monotonic() + GIT_TIMEOUT, exe)
                out = g.run("ls-files", "-z", "--cached", "--others", "--exclude-standard")
                if out is not None:
                    listing = [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]
        files = code_files(root, patterns, listing)
        if files and self.log_artifact is not None:
            store_code(root, files, self.log_artifact)


def store_code(root: Path, files: list[str], log_artifact: Callable[[Path, str], Any]) -> int:
    """Copy ``files`` (relative to ``root``) into a folder and log it as the ``code`` artifact; the files stored.

    At most :data:`CODE_MAX_FILES` files and :data:`CODE_MAX_BYTES` bytes (one warning line past them);
    symbolic links and what is not a regular file are left out.
    """
    import tempfile

    with tempfile.TemporaryDirectory(prefix="tracker-code-") as tmp:
        total = 0
        kept = 0
        for rel in files:
            src = root / rel
            try:
                if not src.is_file() or src.is_symlink():
                    continue
                size = src.stat().st_size
            except OSError:
                continue
            if kept >= CODE_MAX_FILES or total + size > CODE_MAX_BYTES:
                _warn(f"[run] code matched more than {CODE_MAX_FILES} files or {CODE_MAX_BYTES} bytes; "
                      f"the first {kept} files are stored")
                break
            dst = Path(tmp) / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            try:
                shutil.copyfile(src, dst)
            except OSError:
                continue
            total += size
            kept += 1
        if kept:
            log_artifact(Path(tmp), "code")
        return kept


def environment_blobs(view: Any) -> list[tuple[str, str]]:
    """The blobs a run's ``environment`` records name: ``(sha256, what)`` (its package list, its diff).

    ``tracker gc`` keeps them, ``tracker verify`` checks them, ``tracker sync`` uploads them.
    """
    if "environment" not in view.schemas():
        return []
    out = []
    for rec in view.records("environment"):
        for field, what in (("packages", "package list"), ("git_diff", "uncommitted diff")):
            sha = rec.data.get(field)
            if isinstance(sha, str) and re.fullmatch(r"[0-9a-f]{64}", sha):
                out.append((sha, f"environment {what} of writer {rec.writer}"))
    return out


def _warn(text: str) -> None:
    """One line on stderr (captured into the run's console like anything else the process prints)."""
    try:
        stream = sys.stderr
        if stream is not None:
            stream.write(f"tracker: {text}\n")
            stream.flush()
    except Exception:  # noqa: BLE001, S110 - stderr closed: the record's warnings still say it
        pass


__all__ = ["EnvironmentRecorder", "clean_remote", "code_files", "collect", "environment_blobs", "git_facts",
           "gpu_facts", "installed_packages", "store_code"]
