"""``tracker doctor``: what is installed and working here, the first thing a bug report needs.

Python and platform, tracker's version, the fast paths in use (or the Python
fallback and why), the extras whose packages are there, the plugins and their
state, the store and its size, the team URL (password masked) and whether it
answers, and Chromium for the dashboard tests. Every check is a line: nothing
here raises for what it finds missing or unreachable.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import platform
import shutil
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import click

from tracker.cli import CliContext
from tracker.cli.options import format_option, handle_errors
from tracker.cli.render import dumps

#: Extra -> the modules its packages install (what must import for the extra to work).
EXTRAS: dict[str, tuple[str, ...]] = {
    "ui": ("starlette", "uvicorn"),
    "query": ("duckdb", "pyarrow"),
    "team": ("psycopg",),
    "blobs": ("obstore", "boto3"),
    "system": ("psutil", "pynvml"),
    "media": ("PIL",),
    "pandas": ("pandas",),
    "polars": ("polars",),
    "arrow": ("pyarrow",),
    "sweeps": ("optuna", "yaml"),
    "mcp": ("mcp",),
    "lightning": ("lightning",),
    "transformers": ("transformers", "accelerate"),
    "keras": ("keras",),
    "tensorboard": ("tensorboard",),
    "raytune": ("ray",),
    "docs": ("mkdocs", "material"),
}

#: Seconds a team URL has to answer.
TIMEOUT = 3.0


def _fast_path(module: str, name: str, interface: int | None = None) -> dict[str, Any]:
    """Whether the C extension ``module`` is in use, else the Python fallback and why."""
    if os.environ.get("TRACKER_PURE_PYTHON"):
        return {"name": name, "module": module, "in_use": False, "why": "TRACKER_PURE_PYTHON is set"}
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        return {"name": name, "module": module, "in_use": False,
                "why": f"not built ({exc}); the Python fallback writes the same bytes"}
    if interface is not None and getattr(mod, "INTERFACE", None) != interface:
        return {"name": name, "module": module, "in_use": False,
                "why": f"built from other sources (interface {getattr(mod, 'INTERFACE', None)}, expected "
                       f"{interface}): rebuild it (pip install again)"}
    return {"name": name, "module": module, "in_use": True, "why": getattr(mod, "__file__", "") or ""}


def fast_paths() -> list[dict[str, Any]]:
    """The C line writer and the console recorder: in use, or why not."""
    from tracker.write.fast import INTERFACE

    return [_fast_path("tracker.write._fastline", "line writer", INTERFACE),
            _fast_path("tracker.capture._console", "console recorder")]


@functools.lru_cache(maxsize=1)
def _distributions() -> dict[str, list[str]]:
    return metadata.packages_distributions()


def _version_of(module: str) -> str | None:
    top = module.split(".")[0]
    try:
        names = _distributions().get(top, [])
        return metadata.version(names[0]) if names else None
    except Exception:  # noqa: BLE001 - a broken installation is reported as no version, not a traceback
        return None


def extras() -> list[dict[str, Any]]:
    """Each extra with the modules it needs: found (and their versions) or missing."""
    out = []
    for extra, modules in EXTRAS.items():
        found = {m: _version_of(m) for m in modules if importlib.util.find_spec(m) is not None}
        out.append({"extra": extra, "installed": len(found) == len(modules),
                    "modules": {m: (found[m] or "installed") if m in found else "missing" for m in modules}})
    return out


def _size(path: Path) -> tuple[int, int]:
    """Bytes and files under ``path``."""
    total = files = 0
    for root, _dirs, names in os.walk(path):
        for n in names:
            try:
                total += os.lstat(os.path.join(root, n)).st_size
                files += 1
            except OSError:
                continue
    return total, files


def store_facts(obj: CliContext) -> dict[str, Any]:
    """The store the commands would use: where, whether it exists, its size."""
    from tracker.core.urls import is_database_url, redact_url

    given = obj.given_store
    if given is not None and is_database_url(given):
        return {"kind": "database", "location": redact_url(str(given))}
    if given is not None and str(given).startswith(("http://", "https://")):
        return {"kind": "server", "location": redact_url(str(given))}
    path = obj.store_path
    facts: dict[str, Any] = {"kind": "folder", "location": str(path), "exists": path.is_dir()}
    if path.is_dir():
        size, files = _size(path)
        runs = path / "runs"
        facts.update(bytes=size, files=files, runs=sum(1 for p in runs.iterdir() if p.is_dir()) if runs.is_dir() else 0)
    return facts


def _team_url(obj: CliContext) -> tuple[str | None, str]:
    for var in ("TRACKER_URL", "TRACKER_TEAM_URL"):
        if os.environ.get(var):
            return os.environ[var], var
    try:
        url = getattr(obj.config, "team_url", None) or getattr(obj.config, "url", None)
    except Exception as exc:  # noqa: BLE001 - a bad tracker.toml is a line of the report
        return None, f"tracker.toml could not be read: {exc}"
    return (url, "[team] url") if url else (None, "")


def _check_http(url: str) -> tuple[bool, str]:
    import urllib.error
    import urllib.request

    headers = {"User-Agent": "tracker-doctor"}
    if os.environ.get("TRACKER_API_KEY"):
        headers["Authorization"] = f"Bearer {os.environ['TRACKER_API_KEY']}"
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)  # credentials in the URL are never sent; the key is TRACKER_API_KEY's
    base = urlunsplit(parts._replace(netloc=parts.hostname + (f":{parts.port}" if parts.port else "")
                                     if parts.hostname else parts.netloc)).rstrip("/")
    try:
        req = urllib.request.Request(base + "/api/v1/whoami", headers=headers)
        with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:  # noqa: S310 - http(s) only, checked above
            return True, f"answers (HTTP {resp.status})"
    except urllib.error.HTTPError as exc:
        # A server that says 401 or 404 is there and answering: the key, or its version, is the matter.
        return True, f"answers (HTTP {exc.code} {exc.reason})"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return False, f"does not answer ({TIMEOUT:g} s timeout): {reason}"


def _check_postgres(url: str) -> tuple[bool, str]:
    try:
        import psycopg
    except ImportError:
        return False, 'cannot check: psycopg is not installed (pip install "tracker-core[team]")'
    try:
        with psycopg.connect(url, connect_timeout=int(TIMEOUT)) as conn:
            version = conn.execute("SHOW server_version").fetchone()
        return True, f"answers (PostgreSQL {version[0] if version else '?'})"
    except Exception as exc:  # noqa: BLE001 - any failure to connect is the answer
        from tracker.core.urls import redact_urls

        return False, "does not answer: " + " ".join(str(redact_urls(str(exc))).split())


def team_facts(obj: CliContext) -> dict[str, Any]:
    """The team URL (password masked), where it was set, and whether it answers."""
    from tracker.core.urls import redact_url

    url, source = _team_url(obj)
    if url is None:
        return {"url": None, "source": source, "answers": None,
                "detail": source or "none set ([team] url in tracker.toml, or TRACKER_URL)"}
    if url.startswith(("http://", "https://")):
        ok, detail = _check_http(url)
    elif url.startswith(("postgresql://", "postgres://")):
        ok, detail = _check_postgres(url)
    else:
        ok, detail = False, "not an http(s):// or postgresql:// URL"
    return {"url": redact_url(url), "source": source, "answers": ok, "detail": detail}


def chromium() -> dict[str, Any]:
    """Chromium and chromedriver, as the dashboard tests look for them."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    return {"chromium": browser, "chromedriver": shutil.which("chromedriver")}


def plugin_facts(obj: CliContext) -> list[dict[str, Any]]:
    """``tracker plugins``' listing: name, distribution, version, status, error."""
    try:
        infos = obj.host.plugins()
    except Exception as exc:  # noqa: BLE001 - a plugin host that cannot start is a line of the report
        return [{"name": "(plugin host)", "status": "broken", "error": str(exc)}]
    return [{k: v for k, v in p.to_dict().items() if k in ("name", "distribution", "version", "status", "error")}
            for p in infos]


def report(obj: CliContext) -> dict[str, Any]:
    """Everything ``tracker doctor`` says, as plain data."""
    from tracker.core.version import __version__

    return {"tracker": __version__, "python": sys.version.split()[0], "executable": sys.executable,
            "platform": platform.platform(), "fast_paths": fast_paths(), "extras": extras(),
            "plugins": plugin_facts(obj), "store": store_facts(obj), "team": team_facts(obj),
            "dashboard_tests": chromium()}


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def text(facts: dict[str, Any]) -> str:
    """The report as aligned lines."""
    lines = [f"tracker     {facts['tracker']}", f"python      {facts['python']} ({facts['executable']})",
             f"platform    {facts['platform']}", "", "fast paths"]
    for f in facts["fast_paths"]:
        state = "C extension" if f["in_use"] else "Python fallback"
        lines.append(f"  {f['name']:<18} {state}" + ("" if f["in_use"] else f": {f['why']}"))
    lines += ["", "extras"]
    for e in facts["extras"]:
        missing = [m for m, v in e["modules"].items() if v == "missing"]
        if e["installed"]:
            detail = ", ".join(f"{m} {v}" for m, v in e["modules"].items())
            lines.append(f"  {e['extra']:<13} yes  {detail}")
        else:
            lines.append(f"  {e['extra']:<13} no   missing: {', '.join(missing)}")
    lines += ["", "plugins"]
    for p in facts["plugins"]:
        err = f"  {p['error']}" if p.get("error") else ""
        lines.append(f"  {p['name']:<18} {p.get('status', '')}  {p.get('distribution') or ''} "
                     f"{p.get('version') or ''}{err}".rstrip())
    s = facts["store"]
    lines += ["", "store"]
    if s["kind"] in ("database", "server"):
        lines.append(f"  {s['location']} ({'team database' if s['kind'] == 'database' else 'server'})")
    elif s["exists"]:
        lines.append(f"  {s['location']}: {s['runs']} runs, {_bytes(s['bytes'])} in {s['files']} files")
    else:
        lines.append(f"  {s['location']}: does not exist yet (the first run makes it)")
    t = facts["team"]
    lines += ["", "team"]
    lines.append(f"  {t['url']} ({t['source']}): {t['detail']}" if t["url"] else f"  {t['detail']}")
    c = facts["dashboard_tests"]
    lines += ["", "dashboard tests",
              f"  chromium      {c['chromium'] or 'not found (apt-get install chromium)'}",
              f"  chromedriver  {c['chromedriver'] or 'not found (apt-get install chromium-driver)'}"]
    return "\n".join(lines)


@click.command("doctor")
@format_option(choices=("text", "json"), default="text")
@click.pass_obj
@handle_errors
def doctor_cmd(obj: CliContext, fmt: str) -> None:
    """Say what is installed and working: versions, fast paths, extras, plugins, store, team URL, Chromium.

    \b
    Examples:
      tracker doctor
      tracker doctor --format json     # paste it into a bug report
    """
    facts = report(obj)
    click.echo(dumps(facts) if fmt == "json" else text(facts))
