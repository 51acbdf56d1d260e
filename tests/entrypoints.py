"""The core's entry points as pyproject.toml declares them, for an editable install made before one was added.

An editable install records the entry points of its time in its
``.dist-info``; a built-in added since (``alert``) is not loaded until
``pip install -e .`` runs again. :func:`ensure_core_entry_points` writes a
``tracker_core`` .dist-info with the entry points of this checkout's
pyproject.toml into a folder put first on ``sys.path`` and ``PYTHONPATH``
(child processes see it too); with an up-to-date install it does nothing.
"""

from __future__ import annotations

import importlib.metadata
import os
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def ensure_core_entry_points(folder: Path) -> bool:
    """Make the declared entry points of group ``tracker`` visible; whether anything had to be written."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = project["entry-points"]["tracker"]
    installed = {ep.name for ep in importlib.metadata.entry_points(group="tracker")}
    if set(declared) <= installed:
        return False
    info = folder / "tracker_core-0.1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tracker-core\nVersion: 0.1.0\n")
    lines = ["[console_scripts]", *(f"{k} = {v}" for k, v in project["scripts"].items()), "", "[tracker]"]
    lines += [f"{k} = {v}" for k, v in declared.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    sys.path.insert(0, str(folder))
    os.environ["PYTHONPATH"] = os.pathsep.join([str(folder), str(ROOT), os.environ.get("PYTHONPATH", "")])
    importlib.invalidate_caches()
    return True
