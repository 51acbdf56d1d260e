"""Integrations import their framework only when used, and say what to install when it is missing."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

CASES = [("tracker.integrations.lightning", "lightning", "lightning"),
         ("tracker.integrations.transformers", "transformers", "transformers"),
         ("tracker.integrations.keras", "keras", "keras")]


@pytest.mark.parametrize(("module", "framework", "extra"), CASES)
def test_missing_framework_says_what_to_install(module: str, framework: str, extra: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m == framework or m.startswith(framework + ".")] or [framework]:
        monkeypatch.setitem(sys.modules, name, None)  # as if it were not installed
    monkeypatch.delitem(sys.modules, module, raising=False)
    with pytest.raises(ImportError) as info:
        importlib.import_module(module)
    message = str(info.value)
    assert "\n" not in message
    assert f'pip install "tracker-core[{extra}]"' in message and module in message


def test_keras_without_its_backend_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    if importlib.util.find_spec("keras") is None:
        pytest.skip("keras is not installed")
    # A fresh interpreter: Keras picks its backend on first import.
    monkeypatch.setenv("KERAS_BACKEND", "tensorflow")
    code = ("import sys; sys.modules['tensorflow'] = None\n"
            "try:\n    import tracker.integrations.keras\nexcept ImportError as e:\n    print(e)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "module 'tensorflow' is missing" in proc.stdout and "KERAS_BACKEND=torch" in proc.stdout


def test_import_tracker_loads_no_framework() -> None:
    code = ("import sys, tracker, tracker.integrations\n"
            "print(sorted(m for m in ('torch', 'lightning', 'transformers', 'keras', 'tensorboard', 'mlflow')"
            " if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


@pytest.mark.parametrize(("example", "framework"), [("lightning_example.py", "lightning"),
                                                    ("transformers_example.py", "transformers"),
                                                    ("keras_example.py", "keras")])
def test_examples_say_how_to_install_a_missing_framework(example: str, framework: str) -> None:
    root = Path(__file__).resolve().parents[2]
    code = (f"import importlib.util as u, runpy, sys\n"
            f"orig = u.find_spec\n"
            f"u.find_spec = lambda name, *a: None if name == {framework!r} else orig(name, *a)\n"
            f"sys.modules[{framework!r}] = None\n"
            f"runpy.run_path({str(root / 'examples' / example)!r}, run_name='__main__')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=root)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 1 and f'"tracker-core[{framework}]"' in lines[0], proc.stdout
