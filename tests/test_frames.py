"""Data frames of records and runs, for pandas, polars and Arrow, from the derived columns."""

from __future__ import annotations

import math
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import tracker
from tracker.read.frames import record_frame

LIBRARIES = ["pandas", "polars", "arrow"]
MODULES = {"pandas": "pandas", "polars": "polars", "arrow": "pyarrow"}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("frames") / "store"
    with tracker.start_run("p", "a", store=path, run_id="aaa", config={"lr": 0.1, "optim": {"name": "adam",
                                                                                             "beta": 0.9}}) as run:
        run.log({"loss": 1.0, "acc": 0.5}, step=0)
        run.log({"loss": float("nan")}, step=1)  # acc missing: NaN in the frame
        run.log({"acc": 0.75, "n": 3, "ok": True}, step=1)
        run.log({"loss": 0.25, "acc": float("inf")}, step=0)
        run.log_record("fft.loss_point", step=2, total_loss=0.5, mel_err=float("nan"), spec_err=0.1,
                       welch_err=0.2, mean_gate=0.7, model_id="m")
        run.summary["best"] = 0.25
    with tracker.start_run("q", "b", store=path, run_id="bbb", config={"lr": 1}) as run:
        run.log({"loss": 3.0}, step=0)
    return path


def _columns(frame: object, library: str) -> dict[str, list]:
    if library == "pandas":
        return {c: frame[c].tolist() for c in frame.columns}  # type: ignore[attr-defined,index]
    if library == "polars":
        return {c: frame[c].to_list() for c in frame.columns}  # type: ignore[attr-defined,index]
    return frame.to_pydict()  # type: ignore[attr-defined]


def _missing(x: object) -> bool:
    """None, or NaN (pandas' own missing value in a column of text)."""
    return x is None or (isinstance(x, float) and math.isnan(x))


def _same(a: list, b: list) -> bool:
    return len(a) == len(b) and all((isinstance(x, float) and isinstance(y, float) and math.isnan(x)
                                     and math.isnan(y)) or x == y for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("library", LIBRARIES)
def test_metrics_frame(store: Path, library: str) -> None:
    pytest.importorskip(MODULES[library])
    view = tracker.open_store(store).run("aaa")
    cols = _columns(view_frame := view.dataframe("metrics", library=library), library)
    assert list(cols) == ["step", "time", "loss", "acc", "n", "ok"]
    assert cols["step"] == [0, 1, 1, 0]
    assert _same(cols["loss"], [1.0, math.nan, math.nan, 0.25])
    assert _same(cols["acc"], [0.5, math.nan, 0.75, math.inf])  # NaN (not null) where a record lacks it
    assert _same(cols["n"], [math.nan, math.nan, 3.0, math.nan]) and cols["ok"][2] == 1.0
    ref = view.metrics()
    assert all(isinstance(t, float) for t in cols["time"]) and cols["time"] == ref["time"].tolist()
    assert len(view_frame) == 4


@pytest.mark.parametrize("library", LIBRARIES)
def test_frames_do_not_copy_the_columns(store: Path, library: str, monkeypatch) -> None:  # noqa: ANN001
    pytest.importorskip(MODULES[library])
    view = tracker.open_store(store).run("aaa")
    cols = view.metrics()
    monkeypatch.setattr(view, "metrics", lambda: cols)
    frame = view.dataframe("metrics", library=library)
    got = frame["loss"].to_numpy() if library != "arrow" else frame.column("loss").chunk(0).to_numpy()
    assert np.shares_memory(got, cols["loss"])


@pytest.mark.parametrize("library", LIBRARIES)
def test_schema_frame_in_the_schemas_order(store: Path, library: str) -> None:
    pytest.importorskip(MODULES[library])
    view = tracker.open_store(store).run("aaa")
    cols = _columns(view.dataframe("fft.loss_point", library=library), library)
    assert list(cols) == ["step", "time", "model_id", "total_loss", "mel_err", "spec_err", "welch_err", "mean_gate"]
    assert cols["step"] == [2] and cols["model_id"] == ["m"] and math.isnan(cols["mel_err"][0])


@pytest.mark.parametrize("library", LIBRARIES)
def test_run_frame(store: Path, library: str) -> None:
    pytest.importorskip(MODULES[library])
    st = tracker.open_store(store)
    cols = _columns(st.dataframe(library=library), library)
    assert list(cols)[:7] == ["id", "name", "project", "status", "created_at", "ended_at", "tags"]
    assert cols["id"] == ["bbb", "aaa"]  # newest first
    assert _missing(cols["config.optim.name"][0]) and cols["config.optim.name"][1] == "adam"
    assert cols["config.lr"] == [1, 0.1]
    assert cols["summary.best"][1] == 0.25
    assert cols["metric.loss.min"] == [3.0, 0.25] and cols["metric.loss.count"] == [1, 3]
    assert cols["metric.loss.last"] == [3.0, 0.25] and cols["tags"] == [[], []]
    assert cols["metric.acc.max"][1] == math.inf
    one = _columns(st.dataframe(project="q", library=library), library)
    assert one["id"] == ["bbb"]


@pytest.mark.parametrize("library", LIBRARIES)
def test_missing_library_names_the_install(store: Path, library: str, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setitem(sys.modules, MODULES[library], None)
    view = tracker.open_store(store).run("aaa")
    with pytest.raises(tracker.TrackerError) as exc:
        view.dataframe("metrics", library=library)
    assert f'pip install "tracker-core[{library}]"' in str(exc.value)
    with pytest.raises(tracker.TrackerError):
        tracker.open_store(store).dataframe(library=library)
    with pytest.raises(tracker.TrackerError, match="unknown data frame library"):
        view.dataframe("metrics", library="excel")


def test_frames_same_without_the_index(store: Path, monkeypatch) -> None:  # noqa: ANN001
    pytest.importorskip("pandas")
    view = tracker.open_store(store).run("aaa")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        on = view.dataframe("metrics", library="pandas")
        monkeypatch.setenv("TRACKER_INDEX", "off")
        off = record_frame(tracker.open_store(store).run("aaa"), "metrics", "pandas")
    assert on.equals(off)
