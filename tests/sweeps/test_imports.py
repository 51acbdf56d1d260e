"""Optuna and Ray are optional: imported only when used, and a clear line says what to install."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO, write_yaml


@pytest.mark.parametrize(("module", "framework", "extra"), [("tracker.integrations.optuna", "optuna", "sweeps"),
                                                           ("tracker.integrations.raytune", "ray", "raytune")])
def test_missing_framework_says_what_to_install(module: str, framework: str, extra: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == framework or m.startswith(framework + ".")] or [framework]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(ImportError) as info:
        importlib.import_module(module)
    assert "\n" not in str(info.value) and f'pip install "tracker-core[{extra}]"' in str(info.value)


def test_import_tracker_and_sweep_listing_load_no_optuna(tmp_path: Path) -> None:
    code = ("import sys, tracker\n"
            "tracker.sweep, tracker.agent\n"
            "from tracker.cli import make_cli\n"
            "print('optuna' in sys.modules, 'yaml' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["False", "False"]


def test_sweep_create_without_optuna_is_one_line(tmp_path: Path) -> None:
    f = write_yaml(tmp_path / "s.yaml", """
        program: train.py
        method: random
        parameters:
          x: {min: 0.0, max: 1.0}
        """)
    code = ("import sys\nsys.modules['optuna'] = None\n"
            "from tracker.cli import main\nsys.argv = ['tracker', 'sweep', 'create', sys.argv[1]]\nmain()\n")
    proc = subprocess.run([sys.executable, "-c", code, str(f)], capture_output=True, text=True, timeout=60,
                          cwd=tmp_path, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin",
                                             "TRACKER_STORE": str(tmp_path / "store")})
    assert proc.returncode == 1
    assert proc.stderr.strip() == 'tracker: sweeps need Optuna: pip install "tracker-core[sweeps]"'
    assert not (tmp_path / "store" / "sweeps").exists()
