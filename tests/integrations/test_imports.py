"""Integrations import their framework only when used, and say what to install when it is missing."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys

import pytest

CASES = [("tracker.integrations.lightning", "lightning", "lightning"),
         ("tracker.integrations.transformers", "transformers", "transformers"),
         ("tracker.integrations.keras", "keras", "keras")]


@pytest.mark.parametrize(("module", "framework", "extra"), CASES)
def test_missing_framework_says_what_to_install(module: str, framework: str, extra: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, framework, None)  # as if it were not installed
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
