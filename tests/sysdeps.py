"""The one place that decides whether the system packages some tests need are installed.

Dashboard tests drive a real headless Chromium through its driver (Debian's
``chromium`` and ``chromium-driver``); team store tests start a real
PostgreSQL server (Debian's ``postgresql``); the JavaScript client's tests run
on Node 18 or newer (``nodejs``); the HTTP API's examples and floors run ``curl``. Without them those tests skip,
with a reason that names the package and how to install it, and the run ends
with one line listing what was skipped for which package (see
``pytest_terminal_summary`` in tests/conftest.py).

Two environment variables:

- ``TRACKER_TESTS_WITHOUT=chromium,chromium-driver,postgresql,nodejs,curl``: act as if
  those packages were missing (what a fresh machine sees), whatever is installed.
- ``TRACKER_REQUIRE_SYSTEM_PACKAGES=1``: a missing package fails the test
  instead of skipping it (``.ci/run`` sets it, so CI never silently stops
  testing something).
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

CHROMIUM_PACKAGES = ("chromium", "chromium-driver")
POSTGRES_PACKAGES = ("postgresql",)
NODE_PACKAGES = ("nodejs",)
CURL_PACKAGES = ("curl",)
#: Every skip for a missing system package starts with this; the summary line finds them by it.
REASON_PREFIX = "missing system package"
_REASON = re.compile(REASON_PREFIX + r"s? ([a-z0-9 .+-]+?):")


def hidden() -> set[str]:
    """The packages ``TRACKER_TESTS_WITHOUT`` says to treat as missing."""
    return {p.strip() for p in os.environ.get("TRACKER_TESTS_WITHOUT", "").split(",") if p.strip()}


def required() -> bool:
    """Whether a missing system package fails the test (``TRACKER_REQUIRE_SYSTEM_PACKAGES=1``)."""
    return os.environ.get("TRACKER_REQUIRE_SYSTEM_PACKAGES", "") not in ("", "0")


def reason(packages: tuple[str, ...] | list[str], what: str) -> str:
    """The skip reason: the packages, how to install them, and what the test needs them for."""
    names = " ".join(packages)
    plural = "s" if len(packages) > 1 else ""
    return f"{REASON_PREFIX}{plural} {names}: install with `sudo apt-get install {names}` ({what})"


def packages_of(text: str) -> tuple[str, ...] | None:
    """The packages a skip reason written by :func:`reason` names, else ``None``."""
    m = _REASON.search(text)
    return tuple(m.group(1).split()) if m else None


def missing(packages: tuple[str, ...], what: str) -> None:
    """Skip the test (or fail it when packages are required) for missing ``packages``."""
    text = reason(packages, what)
    if required():
        pytest.fail(f"{text}; TRACKER_REQUIRE_SYSTEM_PACKAGES is set", pytrace=False)
    pytest.skip(text)


def chromium_paths() -> tuple[str | None, str | None]:
    """The paths of Chromium and chromedriver (``None`` for one that is missing or hidden)."""
    gone = hidden()
    browser = None if "chromium" in gone else shutil.which("chromium") or shutil.which("chromium-browser")
    driver = None if "chromium-driver" in gone else shutil.which("chromedriver")
    return browser, driver


def require_chromium() -> tuple[str, str]:
    """Chromium and chromedriver, or skip naming the packages to install."""
    browser, driver = chromium_paths()
    if browser is None or driver is None:
        need = tuple(p for p, path in zip(CHROMIUM_PACKAGES, (browser, driver), strict=True) if path is None)
        missing(need, "the dashboard in a real headless browser")
    return browser, driver  # type: ignore[return-value]


def chrome(browser: str, driver: str, *, size: str | None = None, logs: bool = False):  # noqa: ANN201 - selenium
    """A headless Chrome session on Debian's Chromium, through the given chromedriver.

    The driver's path is always passed (``Service(executable_path=...)``), so
    Selenium never runs its own driver manager, which would go to the network.
    """
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            # WebGL (the Media panel's 3D view) on the CPU: headless with no GPU has only SwiftShader.
            "--enable-unsafe-swiftshader"]
    for arg in args + ([f"--window-size={size}"] if size else []):
        opts.add_argument(arg)
    if logs:
        opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=opts, service=Service(executable_path=driver))


def postgres_bindir() -> Path | None:
    """The folder of initdb and pg_ctl: ``pg_config --bindir``, else Debian's /usr/lib/postgresql/*/bin."""
    if "postgresql" in hidden():
        return None
    candidates = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        try:
            out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=10).stdout.strip()
            candidates.append(Path(out))
        except (OSError, subprocess.SubprocessError):
            pass
    candidates += sorted((Path(p) for p in glob.glob("/usr/lib/postgresql/*/bin")),
                         key=lambda p: p.parent.name, reverse=True)
    for c in candidates:
        if (c / "initdb").exists() and (c / "pg_ctl").exists():
            return c
    which = shutil.which("initdb")
    return Path(which).parent if which and shutil.which("pg_ctl") else None


def require_postgres() -> Path:
    """The PostgreSQL server binaries' folder, or skip naming the package to install."""
    bins = postgres_bindir()
    if bins is None:
        missing(POSTGRES_PACKAGES, "a real PostgreSQL server for the team store")
    return bins  # type: ignore[return-value]


def require_node() -> str:
    """The ``node`` executable (Node 18 or newer: the JavaScript client needs its ``fetch``), or skip naming the
    package to install."""
    node = None if "nodejs" in hidden() else shutil.which("node")
    if node is not None:
        try:
            out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
            if int(out.lstrip("v").split(".")[0]) >= 18:
                return node
        except (OSError, subprocess.SubprocessError, ValueError):
            pass
    missing(NODE_PACKAGES, "Node 18 or newer, for the JavaScript client's tests")
    return ""  # not reached: missing() skips or fails


def require_curl() -> str:
    """The ``curl`` executable (the HTTP API's documented examples and the remote benchmark's floor), or skip
    naming the package."""
    curl = None if "curl" in hidden() else shutil.which("curl")
    if curl is None:
        missing(CURL_PACKAGES, "the curl examples of docs/http-api.md and the floor of bench_remote.py")
    return curl  # type: ignore[return-value]
