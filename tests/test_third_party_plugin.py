"""examples/third_party_plugin is really pip-installed into a fresh virtual environment and used."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import textwrap
import venv
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "third_party_plugin"


@pytest.fixture(scope="module")
def fresh_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new virtual environment that sees tracker-core and its dependencies, with the plugin pip-installed."""
    env_dir = tmp_path_factory.mktemp("venv")
    venv.EnvBuilder(with_pip=False).create(env_dir)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    # The fresh environment sees this one's packages (tracker-core and its dependencies) through a
    # .pth file, so the install below adds only the plugin, exactly as a user's pip would.
    here = sysconfig.get_paths()["purelib"]
    Path(purelib, "outer_env.pth").write_text(f"import site; site.addsitedir({here!r})\n")
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q",
                           str(EXAMPLE)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return python


def _run(python: Path, args: list[str], store: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TRACKER_STORE": str(store)}
    env.pop("TRACKER_RUN_ID", None)
    return subprocess.run([str(python), *args], capture_output=True, text=True, timeout=120, env=env,
                          cwd=store.parent)


def test_installed_plugin_is_listed(fresh_python: Path, tmp_path: Path) -> None:
    proc = _run(fresh_python, ["-m", "tracker", "plugins", "--format", "json"], tmp_path / "store")
    assert proc.returncode == 0, proc.stderr
    plugins = {p["name"]: p for p in json.loads(proc.stdout)}
    grad = plugins["gradstats"]
    assert grad["distribution"] == "tracker-gradstats" and grad["version"] == "0.1.0"
    assert grad["status"] == "ok" and not grad["builtin"]
    assert grad["schemas"] == ["grad.norm"] and grad["summarizers"] == ["grad.layers"]
    # and it is really installed there, not importable from the source tree
    where = _run(fresh_python, ["-c", "import tracker_gradstats; print(tracker_gradstats.__file__)"], tmp_path)
    assert "site-packages" in where.stdout and str(EXAMPLE) not in where.stdout


def test_installed_plugin_is_used(fresh_python: Path, tmp_path: Path) -> None:
    script = textwrap.dedent("""
        import numpy as np, tracker
        from tracker_gradstats import grad_record
        with tracker.start_run(name="grads") as run:
            for step in range(4):
                scale = 100.0 if step == 3 else 1.0
                run.log_record("grad.norm", grad_record("fc1", np.full(4, scale)), step=step)
                run.log_record("grad.norm", grad_record("fc2", np.array([0.0, 3.0, 4.0])), step=step)
                run.log({"loss": float("nan") if step >= 2 else 1.0})
        print(run.id)
    """)
    store = tmp_path / "store"
    proc = _run(fresh_python, ["-c", script], store)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("loss is nan") == 1  # the plugin's handler, once per run
    run_id = proc.stdout.strip()
    summary = _run(fresh_python, ["-m", "tracker", "summary", run_id, "--schema", "grad.norm", "--format", "json"],
                   store)
    assert summary.returncode == 0, summary.stderr
    (s,) = json.loads(summary.stdout)["summaries"]
    rows = {r["layer"]: r for r in s["rows"]}
    assert rows["fc1"]["max_norm"] == 200.0 and rows["fc1"]["exploding"] is True
    assert rows["fc2"]["mean_norm"] == 5.0 and rows["fc2"]["exploding"] is False
    assert "exploding: fc1" in s["notes"]
