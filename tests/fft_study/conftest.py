"""Fixtures of the FFT study tests: a host with only this plugin, an open run, a small study run.

The store is ``tracker.testing``'s ``tracker_store`` (loaded by the root conftest).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from tracker_fft_study import plugin
from tracker_fft_study.config import SETTINGS

import tracker

PARAMS = dict(twiddles=384, gates=192, freq_mask=128, denoiser=0, unitary=0, mel_filters=0,
              q8_packed=0)


@pytest.fixture
def host(make_tracker_host, tracker_store: Path) -> Iterator[tracker.Host]:
    """The process's host for the test: the built-in metrics plugin and fft_study only."""
    yield make_tracker_host(plugin, names=["fft_study"])
    SETTINGS.load({})


@pytest.fixture
def run(host, tracker_store: Path) -> Iterator[tracker.Run]:
    """An open run in the test's store."""
    with tracker.start_run(project="fft", name="test", store=tracker_store) as active:
        yield active


@pytest.fixture
def study_run(host, tracker_store: Path) -> str:
    """A finished run with every fft.* schema and hand-checkable numbers; returns its id.

    - loss points of "a" (logged out of step order, one NaN), "b" (one point);
    - params of "a" (logged twice: the later one counts) and "c";
    - a trace of "a"; heatmaps of "a" at steps 0 and 10; one landscape of "a".
    """
    with tracker.start_run(project="fft", name="study", store=tracker_store) as r:
        for step, loss, mel, spec in [(0, 2.0, 0.5, 0.9), (20, 0.5, 0.2, 0.3),
                                      (10, math.nan, 0.3, 0.4), (30, 0.8, 0.1, 0.2)]:
            r.log_record("fft.loss_point", step=step, model_id="a", total_loss=loss,
                         mel_err=mel, spec_err=spec, welch_err=0.01, mean_gate=0.75)
        r.log_record("fft.loss_point", step=5, model_id="b", total_loss=3.0, mel_err=0.7,
                     spec_err=0.8, welch_err=0.1, mean_gate=1.0)
        r.log_record("fft.params", model_id="a", variant="old", n_fft=64, **PARAMS)
        r.log_record("fft.params", model_id="a", variant="gated", n_fft=64, **PARAMS)
        r.log_record("fft.params", model_id="c", variant="exact", n_fft=8,
                     **{**dict.fromkeys(PARAMS, 0), "twiddles": 24})
        r.log_record("fft.trace", model_id="a", variant="gated", n_fft=64, batch=32,
                     train_steps=30, final_mel_err=0.11, final_spec_err=0.22)
        r.log_record("fft.heatmap", step=0, model_id="a", stages=2, butterflies=4,
                     gates=[1.0] * 8)
        r.log_record("fft.heatmap", step=10, model_id="a", stages=2, butterflies=4,
                     gates=[0.9, 0.1, 0.2, 0.8, 0.5, 0.3, 1.0, 0.6],
                     twiddle_mag=[1.0, 0.5, 2.0, 1.0, 1.0, 1.0, 0.25, 1.0],
                     freq_mask=[1.0, 0.5, 0.0, 0.25])
        r.log_record("fft.landscape", step=30, model_id="a", x_label="w0", y_label="w1",
                     x=[-1.0, 0.0, 1.0], y=[0.0, 2.0],
                     z=[[3.0, 2.0, 4.0], [1.5, math.nan, 0.5]])
    return r.id
