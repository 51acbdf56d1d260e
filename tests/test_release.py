"""Releases: `python -m build` makes an sdist and a wheel; the wheel installs alone in a fresh virtual environment
outside the source tree and works (log, read, CLI, doctor, the dashboard's import); the sdist installs where no C
compiler works, with one notice, and `tracker doctor` then names the Python fallback.

Built once per session (the module's fixtures); the environments live in a temporary folder, never in the tree.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTICE = "tracker: no working C compiler"

pytestmark = pytest.mark.release


def _env(**extra: str) -> dict[str, str]:
    """The environment of the installed copy: no PYTHONPATH (this tree must not be importable), no tracker settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("TRACKER_") and k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(extra)
    return env


def _run(args: list[str], cwd: Path, timeout: float = 600, **extra: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, cwd=cwd, env=_env(**extra), capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (f"{' '.join(args)} failed ({proc.returncode}):\n"
                                  f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist and the wheel, built from this tree by `python -m build`."""
    pytest.importorskip("build", reason="the test extra: pip install build")
    out = tmp_path_factory.mktemp("dist")
    # Built from a copy: building writes tracker_core.egg-info (and build/) beside the sources, never into this tree.
    src = tmp_path_factory.mktemp("src") / "tracker-core"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "site", "*.egg-info", "__pycache__", ".tracker", ".pytest_cache",
        ".ruff_cache", ".hypothesis", ".cache", "*.so", "node_modules"))
    _run([sys.executable, "-m", "build", "--outdir", str(out), str(src)], cwd=out)
    (sdist,) = out.glob("tracker_core-*.tar.gz")
    (wheel,) = out.glob("tracker_core-*.whl")
    return {"sdist": sdist, "wheel": wheel}


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, dist: dict[str, Path]) -> Path:
    """A fresh virtual environment outside the source tree with the wheel and its `ui` extra installed."""
    root = tmp_path_factory.mktemp("venv")
    assert REPO not in root.parents
    _run([sys.executable, "-m", "venv", str(root / "v")], cwd=root)
    _run([str(root / "v" / "bin" / "python"), "-m", "pip", "install", "-q", f"{dist['wheel']}[ui]"], cwd=root)
    return root / "v"


def test_the_sdist_carries_the_c_sources_static_files_and_py_typed(dist: dict[str, Path]) -> None:
    import tarfile

    with tarfile.open(dist["sdist"]) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for needed in ("tracker/write/_fastline.c", "tracker/capture/_console.c", "tracker/core/_crc32.h",
                   "tracker/py.typed", "tracker/ui/static/index.html", "setup.py", "pyproject.toml"):
        assert needed in names, f"the sdist lacks {needed}"
    assert not [n for n in names if n.endswith((".so", ".pyc"))], "the sdist carries built files"
    from tracker.core.version import __version__

    assert dist["wheel"].name.startswith(f"tracker_core-{__version__}-")


def test_the_wheel_installs_alone_and_works(venv: Path, tmp_path: Path) -> None:
    py, cli = str(venv / "bin" / "python"), str(venv / "bin" / "tracker")
    store = tmp_path / "store"
    script = textwrap.dedent("""
        import tracker, tracker.ui
        assert "site-packages" in tracker.__file__, tracker.__file__
        with tracker.start_run(project="smoke", config={"lr": 0.1}) as run:
            for step in range(10):
                run.log({"loss": 1.0 / (step + 1)}, step=step)
        view = tracker.open_store().run(run.id)
        assert view.info.status == "finished" and list(view.metrics()["loss"])[-1] == 0.1
        app = tracker.ui.create_app()
        print(tracker.__version__, run.id, type(app).__name__)
    """)
    out = _run([py, "-c", script], cwd=tmp_path, TRACKER_STORE=str(store)).stdout.split()
    from tracker.core.version import __version__

    assert out[0] == __version__ and out[2] == "Starlette"
    runs = json.loads(_run([cli, "runs", "--format", "json"], cwd=tmp_path, TRACKER_STORE=str(store)).stdout)
    assert [r["id"] for r in runs] == [out[1]] and runs[0]["project"] == "smoke"
    assert _run([cli, "--version"], cwd=tmp_path).stdout.strip() == f"tracker, version {__version__}"
    doctor = json.loads(_run([cli, "doctor", "--format", "json"], cwd=tmp_path, TRACKER_STORE=str(store)).stdout)
    assert doctor["tracker"] == __version__ and doctor["store"]["runs"] == 1
    # built here with a compiler: the C paths are in use, from the installed copy
    assert all(p["in_use"] for p in doctor["fast_paths"]), doctor["fast_paths"]
    assert all("site-packages" in p["why"] for p in doctor["fast_paths"])
    assert {e["extra"]: e["installed"] for e in doctor["extras"]}["ui"] is True


def test_the_sdist_installs_without_a_compiler_with_one_notice(venv: Path, dist: dict[str, Path],
                                                               tmp_path: Path) -> None:
    py, cli = str(venv / "bin" / "python"), str(venv / "bin" / "tracker")
    proc = _run([py, "-m", "pip", "install", "-v", "--no-deps", "--force-reinstall", "--no-cache-dir",
                 str(dist["sdist"])], cwd=tmp_path, CC="false", CXX="false")
    notices = [line for line in (proc.stdout + proc.stderr).splitlines() if NOTICE in line]
    assert len(notices) == 1, f"expected one notice, got {notices}"
    assert "tracker.write._fastline" in notices[0] and "tracker.capture._console" in notices[0]
    doctor = json.loads(_run([cli, "doctor", "--format", "json"], cwd=tmp_path).stdout)
    for path in doctor["fast_paths"]:
        assert path["in_use"] is False and "not built" in path["why"], path
    text = _run([cli, "doctor"], cwd=tmp_path).stdout
    assert "line writer        Python fallback: not built" in text
    # the fallback logs and reads the same way
    script = ("import tracker\nwith tracker.start_run(project='nocc') as run:\n    run.log({'x': 1.0})\n"
              "print(tracker.open_store().run(run.id).metrics()['x'][0])")
    assert _run([py, "-c", script], cwd=tmp_path, TRACKER_STORE=str(tmp_path / "s")).stdout.strip() == "1.0"
