"""``store.aggregate`` and its grid against numpy and a plain-Python reference, on aligned and ragged runs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tracker
from tracker.read.aggregate import aggregate_series, group_runs, parse_band


def reference(runs: list[list[tuple[int, float]]], max_points: int) -> dict[int, list[float]]:
    """Per grid point, the values of the runs covering it: the module's rules, written out the slow way."""
    runs = [sorted([(s, v) for s, v in r if math.isfinite(v)], key=lambda p: p[0]) for r in runs]
    runs = [r for r in runs if r]
    steps = sorted({s for r in runs for s, _ in r})
    if len(steps) <= max_points:
        edges = steps
    else:
        lo, hi = steps[0], steps[-1]
        edges = sorted({lo + (k * (hi - lo + 1)) // max_points for k in range(max_points)})
    out: dict[int, list[float]] = {}
    for j, e in enumerate(edges):
        end = edges[j + 1] if j + 1 < len(edges) else steps[-1] + 1
        vals = []
        for r in runs:
            if r[0][0] < end and r[-1][0] >= e:
                vals.append([v for s, v in r if s < end][-1])
        if vals:
            out[e] = vals
    return out


def bucket_extremes(runs: list[list[tuple[int, float]]], grid: list[int], end: int) -> tuple[list[float], list[float]]:
    lows, highs = [], []
    for j, e in enumerate(grid):
        stop = grid[j + 1] if j + 1 < len(grid) else end
        inside = [v for r in runs for s, v in r if e <= s < stop and math.isfinite(v)]
        lows.append(min(inside) if inside else math.nan)
        highs.append(max(inside) if inside else math.nan)
    return lows, highs


values = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
run = st.lists(st.tuples(st.integers(0, 60), st.one_of(values, values, values, st.just(math.nan))), min_size=1,
               max_size=40)


@settings(max_examples=150, deadline=None)
@given(st.lists(run, min_size=1, max_size=6), st.integers(1, 50))
def test_ragged_runs_match_the_reference(runs: list[list[tuple[int, float]]], max_points: int) -> None:
    ref = reference(runs, max_points)
    got = aggregate_series([([s for s, _ in r], [v for _, v in r]) for r in runs], max_points=max_points)
    if not ref:
        assert got is None
        return
    assert got["step"].tolist() == list(ref)
    assert len(got["step"]) <= max_points
    assert got["count"].tolist() == [len(v) for v in ref.values()]
    assert got["n"] == sum(1 for r in runs if any(math.isfinite(v) for _, v in r))
    np.testing.assert_allclose(got["mean"], [np.mean(v) for v in ref.values()], rtol=1e-9, atol=1e-6)
    np.testing.assert_allclose(got["std"], [np.std(v) for v in ref.values()], rtol=1e-7, atol=1e-6)
    np.testing.assert_allclose(got["lo"], got["mean"] - got["std"])
    # Per bucket, the smallest and largest value any run logged there (or carried into it).
    for j, vals in enumerate(ref.values()):
        assert got["min"][j] <= min(vals) and got["max"][j] >= max(vals)
    top = max(s for r in runs for s, v in r if math.isfinite(v)) + 1
    lows, highs = bucket_extremes(runs, got["step"].tolist(), top)
    for j in range(len(lows)):
        if not math.isnan(lows[j]):
            assert got["min"][j] == min(lows[j], min(ref[int(got["step"][j])]))
            assert got["max"][j] == max(highs[j], max(ref[int(got["step"][j])]))


@settings(max_examples=60, deadline=None)
@given(st.lists(run, min_size=1, max_size=5), st.integers(1, 50), st.sampled_from(["minmax", (10, 90), (25, 75)]))
def test_median_and_every_band_match_numpy(runs: list[list[tuple[int, float]]], max_points: int, band: object) -> None:
    ref = reference(runs, max_points)
    got = aggregate_series([([s for s, _ in r], [v for _, v in r]) for r in runs], stat="median", band=band,
                           max_points=max_points)
    if not ref:
        return
    np.testing.assert_allclose(got["median"], [np.median(v) for v in ref.values()], rtol=1e-9, atol=1e-6)
    if band == "minmax":
        lo, hi = [min(v) for v in ref.values()], [max(v) for v in ref.values()]
    else:
        lo = [np.percentile(v, band[0]) for v in ref.values()]
        hi = [np.percentile(v, band[1]) for v in ref.values()]
    np.testing.assert_allclose(got["lo"], lo, rtol=1e-9, atol=1e-6)
    np.testing.assert_allclose(got["hi"], hi, rtol=1e-9, atol=1e-6)


def test_aligned_runs_equal_numpy_over_the_stacked_arrays() -> None:
    rng = np.random.default_rng(3)
    steps = np.arange(0, 500, 5)
    ys = rng.normal(size=(7, steps.size)).cumsum(axis=1)
    got = aggregate_series([(steps, y) for y in ys], max_points=1000)
    assert got["step"].tolist() == steps.tolist() and got["n"] == 7 and (got["count"] == 7).all()
    np.testing.assert_allclose(got["mean"], ys.mean(axis=0))
    np.testing.assert_allclose(got["std"], ys.std(axis=0))
    np.testing.assert_allclose(got["hi"], ys.mean(axis=0) + ys.std(axis=0))
    np.testing.assert_allclose(got["min"], ys.min(axis=0))
    np.testing.assert_allclose(got["max"], ys.max(axis=0))
    med = aggregate_series([(steps, y) for y in ys], stat="median", band="minmax")
    np.testing.assert_allclose(med["median"], np.median(ys, axis=0))
    np.testing.assert_allclose(med["lo"], ys.min(axis=0))


def test_early_stops_are_not_extrapolated_and_a_spike_is_kept() -> None:
    n = 100_000
    steps = np.arange(n)
    base = np.linspace(1.0, 0.1, n)
    spiky = base.copy()
    spiky[54_321] = 50.0  # one step in a hundred thousand
    short = base[: n // 2] + 0.5  # stopped at half way
    got = aggregate_series([(steps, base), (steps, spiky), (steps[: n // 2], short)], max_points=1000)
    assert got["step"].size == 1000 and got["step"][0] == 0 and got["step"][1] == 100
    half = int(np.searchsorted(got["step"], n // 2))
    assert (got["count"][:half] == 3).all() and (got["count"][half:] == 2).all()
    # The short run's last value is not carried past its last step: the mean after it is over two runs.
    np.testing.assert_allclose(got["mean"][half:], base[got["step"][half:] + 99])
    bucket = 54_321 // 100
    assert got["max"][bucket] == 50.0 and got["max"][bucket - 1] < 2 and got["max"][bucket + 1] < 2
    assert got["mean"][bucket] < 2  # the line is the runs' last values; the spike lives in the envelope


def test_sparse_runs_carry_their_last_value_within_their_own_range() -> None:
    got = aggregate_series([([0, 10, 20], [1.0, 2.0, 3.0]), ([0, 5, 10, 15, 20, 25], [0, 0, 0, 0, 0, 0])])
    assert got["step"].tolist() == [0, 5, 10, 15, 20, 25]
    assert got["count"].tolist() == [2, 2, 2, 2, 2, 1]
    assert got["mean"].tolist() == [0.5, 0.5, 1.0, 1.0, 1.5, 0.0]


def test_steps_at_the_ends_of_their_range() -> None:
    big = 2**53
    got = aggregate_series([([-big, 0, big], [1.0, 2.0, 3.0]), ([-big + 1, big], [5.0, 7.0])], max_points=2)
    assert got["step"].tolist() == [-big, 0]  # two buckets of 2**53 steps
    assert got["count"].tolist() == [2, 2] and got["mean"].tolist() == [3.0, 5.0]
    assert got["max"].tolist() == [5.0, 7.0]


def test_bad_arguments_are_one_line_each() -> None:
    with pytest.raises(tracker.TrackerError, match="stat: expected 'mean' or 'median'"):
        aggregate_series([([0], [1.0])], stat="mode")
    with pytest.raises(tracker.TrackerError, match="band: expected 'std', 'minmax' or a percentile pair"):
        aggregate_series([([0], [1.0])], band=(90, 10))
    with pytest.raises(tracker.TrackerError, match="max_points: expected an int from 1"):
        aggregate_series([([0], [1.0])], max_points=0)
    assert parse_band("p10-p90") == (10.0, 90.0) and parse_band([5, 95]) == (5.0, 95.0)


@pytest.fixture
def seeds(tmp_store: Path) -> Path:
    """Two ablations of three seeds each (one stops early), a run of 0.4 with its group as a tag, one without."""
    for lr in (0.1, 0.01):
        for seed in range(3):
            with tracker.start_run(project="abl", config={"lr": lr, "seed": seed, "opt": {"name": "adam"}},
                                   group=f"lr={lr}", job_type="train") as run:
                for s in range(0, 100 if seed else 60):
                    run.log({"loss": 1 / (s + 1) + lr + seed / 100, "acc": s / 100}, step=s)
    with tracker.start_run(project="abl", config={"lr": 0.1, "seed": 9}, tags=["group:lr=0.1", "old"]) as run:
        run.log({"loss": 9.0}, step=0)
    with tracker.start_run(project="other", config={"seed": 1}) as run:
        run.log({"acc": 0.5}, step=0)
    return tmp_store


def test_store_aggregate_by_group_and_config_matches_numpy(seeds: Path) -> None:
    store = tracker.open_store(seeds)
    agg = store.aggregate("loss", by="group")
    assert list(agg) == ["lr=0.01", "lr=0.1"]  # the run without a loss has no group line
    a = agg["lr=0.1"]
    assert a["n"] == 4 and len(a["runs"]) == 4  # three seeds and the 0.4 run read through its tag
    by_lr = store.aggregate("loss", by="config.lr", max_points=1000)
    assert list(by_lr) == [0.01, 0.1]
    g = by_lr[0.01]
    steps = np.arange(100)
    full = np.array([1 / (steps + 1) + 0.01 + seed / 100 for seed in (1, 2)])
    early = 1 / (steps[:60] + 1) + 0.01
    assert g["step"].tolist() == steps.tolist()
    assert g["count"].tolist() == [3] * 60 + [2] * 40
    np.testing.assert_allclose(g["mean"][:60], np.vstack([full[:, :60], early]).mean(axis=0))
    np.testing.assert_allclose(g["std"][60:], full[:, 60:].std(axis=0))
    np.testing.assert_allclose(g["mean"][60:], full[:, 60:].mean(axis=0))
    one = store.aggregate("acc", by=None)
    assert list(one) == [None] and one[None]["n"] == 7
    nested = store.aggregate("loss", by="config.opt.name")
    assert list(nested) == ["adam", None]


def test_store_aggregate_says_what_is_wrong(seeds: Path) -> None:
    store = tracker.open_store(seeds)
    with pytest.raises(tracker.TrackerError) as err:
        store.aggregate("loss", by="config.momentum")
    text = str(err.value)
    assert "no run has config key 'momentum'" in text and "config.lr" in text and "\n" not in text
    with pytest.raises(tracker.TrackerError, match=r"metric 'lss': none of the 8 runs logged it \(metrics logged: "
                                                  r"acc, loss\)"):
        store.aggregate("lss")
    with pytest.raises(tracker.TrackerError, match="group by 'colour': expected one of group, job_type"):
        store.aggregate("loss", by="colour")
    with pytest.raises(tracker.RunNotFound):
        store.aggregate("loss", runs=["nosuchrun"])


def test_group_order_and_tag_groups() -> None:
    from tracker.core.records import RunInfo

    infos = [RunInfo(id=f"r{i}", tags=t, config={"k": k}) for i, (t, k) in
             enumerate([(["a", "b"], 10), (["b"], 9), ([], "x"), (["a"], "x2"), (["a"], 1.5)])]
    groups = group_runs(infos, "tag")
    assert list(groups) == ["a", "b", None]
    assert [i.id for i in groups["a"]] == ["r0", "r3", "r4"]
    by_k = group_runs(infos, "config.k")
    assert [(k, [i.id for i in v]) for k, v in by_k.items()] == \
        [(1.5, ["r4"]), (9, ["r1"]), (10, ["r0"]), ("x", ["r2"]), ("x2", ["r3"])]
