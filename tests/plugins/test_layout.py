"""The four plugins under plugins/ share one layout (docs/plugins.md, "The layout").

record.py holds the record classes and ``SCHEMAS``, summary.py the
summarizers and ``SUMMARIZERS``, plugin.py only hook implementations, and
every package ships ``py.typed``; the entry point names plugin.py.
"""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
from pathlib import Path

import pytest

import tracker

ROOT = Path(__file__).resolve().parents[2]
PLUGINS = {"fft_study": "tracker_fft_study", "ptq": "tracker_ptq",
           "phase_trainer": "tracker_phase_trainer", "quant_analysis": "tracker_quant_analysis"}
OLD_NAMES = ("schema.py", "command.py", "settings.py", "commands.py", "schemas.py", "records.py")


@pytest.mark.parametrize(("folder", "package"), PLUGINS.items())
def test_files_of_the_layout(folder: str, package: str) -> None:
    pkg = ROOT / "plugins" / folder / package
    for name in ("record.py", "summary.py", "plugin.py", "py.typed"):
        assert (pkg / name).is_file(), f"plugins/{folder}/{package}/{name} is missing"
    for name in OLD_NAMES:
        assert not (pkg / name).exists(), f"plugins/{folder}/{package}/{name}: use the shared names"
    pyproject = (ROOT / "plugins" / folder / "pyproject.toml").read_text(encoding="utf-8")
    assert f'{package} = ["py.typed"]' in pyproject, f"{folder}: py.typed not in package-data"


@pytest.mark.parametrize(("folder", "package"), PLUGINS.items())
def test_plugin_module_holds_only_hook_implementations(folder: str, package: str) -> None:
    path = ROOT / "plugins" / folder / package / "plugin.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            decorators = {d.id if isinstance(d, ast.Name) else getattr(d, "attr", "")
                          for d in node.decorator_list}
            assert node.name.startswith("tracker_") and "hookimpl" in decorators, (
                f"plugins/{folder}/{package}/plugin.py:{node.lineno}: {node.name} is not a hook "
                f"implementation; move it to the module named for what it does")
        else:
            assert isinstance(node, (ast.Import, ast.ImportFrom, ast.Expr)), (
                f"plugins/{folder}/{package}/plugin.py:{node.lineno}: only imports, the "
                f"docstring and @hookimpl functions belong here")


@pytest.mark.parametrize(("folder", "package"), PLUGINS.items())
def test_schemas_and_summarizers_live_in_record_and_summary(folder: str, package: str) -> None:
    record = importlib.import_module(f"{package}.record")
    summary = importlib.import_module(f"{package}.summary")
    assert record.SCHEMAS and all(isinstance(s, tracker.Schema) for s in record.SCHEMAS)
    assert summary.SUMMARIZERS and all(isinstance(s, tracker.Summarizer)
                                       for s in summary.SUMMARIZERS)
    plugin = importlib.import_module(f"{package}.plugin")
    assert plugin.tracker_schemas() == record.SCHEMAS
    assert plugin.tracker_summarizers() == summary.SUMMARIZERS
    (entry,) = [e for e in importlib.metadata.entry_points(group="tracker") if e.name == folder]
    assert entry.value == f"{package}.plugin"
