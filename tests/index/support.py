"""Every answer a reader gives of a store, in a form two stores can be compared by (NaN equal to NaN)."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import tracker


def norm(x: Any) -> Any:
    """``x`` with NaN made comparable and types kept (1 and 1.0 and True stay apart)."""
    if isinstance(x, float):
        return ("float", "nan") if math.isnan(x) else ("float", x)
    if isinstance(x, dict):
        return {k: norm(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [norm(v) for v in x]
    if hasattr(x, "tolist"):
        return norm(x.tolist())
    return (type(x).__name__, x)


def answers(store: Path, mode: str = "on") -> dict[str, Any]:
    """Listing, infos, records, metrics, tables, schemas, summaries and metric figures of every run.

    :param mode: ``"on"`` reads through the derived index, ``"off"`` parses the JSONL.
    """
    old = os.environ.get("TRACKER_INDEX")
    os.environ["TRACKER_INDEX"] = mode
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            st = tracker.open_store(store)
            out: dict[str, Any] = {"runs": [norm(i.to_dict()) for i in st.runs()]}
            for entry in st.catalog():
                v = st.run(entry.info.id)
                tables = {s: {k: norm(c) for k, c in v.table(s).columns.items()} for s in v.schemas()}
                out[entry.info.id] = {
                    "records": norm(list(v.records())), "schemas": v.schemas(), "max_step": v.max_step(),
                    "metrics": norm(v.metrics()), "tables": tables, "counts": v.schema_counts(),
                    "figures": norm(v.metric_stats()), "catalog": norm(entry.metrics),
                    "summaries": norm([s.to_dict() for s in v.summarize()]),
                    "problems": sorted({(p.path, p.line or 0, p.kind) for p in v.problems}),
                }
            return out
    finally:
        if old is None:
            os.environ.pop("TRACKER_INDEX", None)
        else:
            os.environ["TRACKER_INDEX"] = old


def assert_same_answers(store: Path) -> dict[str, Any]:
    """The answers through the index equal those parsed from the JSONL; returns them."""
    plain = answers(store, "off")
    indexed = answers(store, "on")
    assert indexed.keys() == plain.keys()
    for key in plain:
        assert indexed[key] == plain[key], (key, diff(indexed[key], plain[key]))
    return indexed


def diff(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two answers differ, as readable paths (for the assertion message)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in {**a, **b}:
            out += diff(a.get(k), b.get(k), f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in diff(x, y, f"{path}[{i}]")]
    return [] if a == b else [f"{path}: {str(a)[:200]} != {str(b)[:200]}"]


def drop_index(store: Path) -> None:
    shutil.rmtree(store / "index", ignore_errors=True)


def run_child(code: str, *, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``code`` in a fresh Python process (the project importable), failing on a non-zero exit."""
    root = Path(tracker.__file__).parent.parent
    full = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
            **(env or {})}
    proc = subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    return proc
