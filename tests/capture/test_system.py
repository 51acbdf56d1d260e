"""System metrics: real sampling in a real process, a raising psutil, no NVML, a fake NVML."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import types
from pathlib import Path

import pytest

import tracker
from tracker.capture.system import Sampler, load_psutil

psutil = pytest.importorskip("psutil", reason="the system extra (psutil) is part of the test extra")

CHILD = r"""
import sys, time, tracker
run = tracker.start_run(store=sys.argv[1], run_id="sys", system_metrics=0.2)
run.log({"loss": 1.0})
end = time.time() + 1.3
x = 0
while time.time() < end:   # keep a core busy so that CPU figures move
    x += 1
run.log({"loss": 0.5})
run.finish()
"""


def test_sampling_in_a_real_process(tmp_path: Path) -> None:
    store = tmp_path / "store"
    res = subprocess.run([sys.executable, "-c", CHILD, str(store)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    view = tracker.open_store(store).run("sys")
    recs = list(view.records("system"))
    assert len(recs) >= 3
    total = psutil.virtual_memory().total
    cores = psutil.cpu_count() or 1
    start = view.info.created_at
    assert recs[0].time - start >= 0.19  # the first sample one interval after the start
    for r in recs:
        d = r.data
        assert 0 < d["memory_used_bytes"] < total
        assert 0 < d["process_rss_bytes"] < total
        assert 0.0 <= d["process_cpu_percent"] <= 100.0 * cores
        assert 0.0 <= d["cpu_percent"] <= 100.0
        assert 0.0 <= d["memory_percent"] <= 100.0
    # Each sample carries the run's latest step when it was taken.
    t_second = [m.time for m in view.records("metrics")][1]
    for r in recs:
        assert r.step == 0 if r.time < t_second else r.step in (0, 1)
        assert r.step == 0 or r.time >= t_second
    # Samples never advance the automatic step.
    assert view.metrics()["step"].tolist() == [0, 1]
    assert max(r.data["process_cpu_percent"] for r in recs) > 0.0  # it was busy
    [summary] = view.summarize("system")
    rows = {row["metric"]: row for row in summary.rows}
    assert rows["process_rss_bytes"]["peak"] == max(r.data["process_rss_bytes"] for r in recs)
    assert rows["cpu_percent"]["mean"] == pytest.approx(sum(r.data["cpu_percent"] for r in recs) / len(recs))
    info = tracker.open_store(store).run("sys").info
    assert info.status == "finished"
    assert not list(view.records("system.gpu"))  # no GPU here (or no NVML): no records
    # The finish event carries the peaks and means for the runs table.
    assert info.system["samples"] == len(recs)
    assert info.system["process_rss_peak_bytes"] == rows["process_rss_bytes"]["peak"]
    assert info.system["cpu_percent_peak"] == rows["cpu_percent"]["peak"]
    assert info.system["cpu_percent_mean"] == pytest.approx(rows["cpu_percent"]["mean"])
    from .conftest import cli

    res = cli(store, "runs", "--system")
    assert res.returncode == 0 and "cpu% peak" in res.stdout and "rss peak" in res.stdout
    assert f"{rows['cpu_percent']['peak']:g}" in res.stdout


def test_sampler_thread_stops_at_finish(tmp_store: Path) -> None:
    before = {t.name for t in threading.enumerate()}
    run = tracker.start_run(system_metrics=30)
    assert "tracker-system-sampler" in {t.name for t in threading.enumerate()} - before
    run.finish()
    assert "tracker-system-sampler" not in {t.name for t in threading.enumerate()}
    # system_metrics=False: no thread at all.
    with tracker.start_run(system_metrics=False):
        assert "tracker-system-sampler" not in {t.name for t in threading.enumerate()}


def test_config_turns_sampling_off_and_sets_the_interval(tmp_store: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from tracker.config import load_config

    from tracker.capture.system import resolve_interval

    toml = tmp_path / "tracker.toml"
    toml.write_text("[system]\nenabled = false\ninterval = 2.5\n")
    cfg = load_config(toml)
    assert resolve_interval(None, cfg) is None and resolve_interval(0.5, cfg) == 0.5
    toml.write_text("[system]\ninterval = 2\n")
    assert resolve_interval(None, load_config(toml)) == 2.0
    assert resolve_interval(False, load_config(toml)) is None
    for body, key in (("[system]\ninterval = 0\n", "interval"), ("[system]\nenabled = 'yes'\n", "enabled"),
                      ("[system]\nrate = 1\n", "rate")):
        toml.write_text(body)
        with pytest.raises(tracker.ConfigError, match=key) as err:
            load_config(toml)
        assert str(toml.resolve()) in str(err.value)
    with pytest.raises(TypeError, match="system_metrics"):
        tracker.start_run(system_metrics="often")
    assert not (tmp_store / "runs").exists() or not list((tmp_store / "runs").iterdir())


class _RaisingPsutil(types.ModuleType):
    """psutil whose every counter raises except those named in ``ok``."""

    def __init__(self, ok: set[str]) -> None:
        super().__init__("psutil")
        self.ok = ok

    def __getattr__(self, name: str):
        real = getattr(psutil, name)
        if name in self.ok or not callable(real) or isinstance(real, type) and issubclass(real, BaseException):
            return real

        def boom(*a, **k):
            raise psutil.AccessDenied(os.getpid(), "denied by the test")

        return boom


def test_sampler_survives_a_raising_psutil_and_absent_nvml() -> None:
    got = []
    s = Sampler(lambda schema, data: got.append((schema, data)), 0.05,
                psutil=_RaisingPsutil({"Process", "virtual_memory"}), nvml=None)
    assert s.start()
    s.sample()
    s.stop()
    assert got and {schema for schema, _ in got} == {"system"}
    d = got[0][1]
    # What could be read is there; what raised is left out (null).
    assert d["memory_used_bytes"] > 0 and d["process_rss_bytes"] > 0
    assert d["cpu_percent"] is None and d["disk_read_bytes"] is None and d["net_sent_bytes"] is None
    # Every psutil call raising, even Process(): no system records, no exception, no thread.
    s = Sampler(lambda *a: got.append(a), 0.05, psutil=_RaisingPsutil(set()), nvml=None)
    assert not s.start() and s._thread is None


def test_emit_errors_do_not_stop_the_thread() -> None:
    calls = []

    def emit(schema, data):
        calls.append(schema)
        raise OSError("disk full")

    s = Sampler(emit, 0.02, nvml=None)
    assert s.start()
    deadline = threading.Event()
    deadline.wait(0.3)
    s.stop()
    assert len(calls) >= 3


def test_missing_psutil_and_nvml_mean_one_debug_line(monkeypatch: pytest.MonkeyPatch, caplog) -> None:
    monkeypatch.setitem(sys.modules, "psutil", None)  # import psutil raises ImportError
    monkeypatch.setitem(sys.modules, "pynvml", None)
    caplog.set_level(logging.DEBUG, logger="tracker.system")
    assert load_psutil() is None
    s = Sampler(lambda *a: pytest.fail("nothing to sample"))
    assert not s.start()
    msgs = [r.getMessage() for r in caplog.records if r.name == "tracker.system"]
    assert len([m for m in msgs if "psutil" in m]) == 2 and all(r.levelno == logging.DEBUG for r in caplog.records)


def test_no_records_without_psutil_in_a_run(tmp_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psutil", None)
    monkeypatch.setitem(sys.modules, "pynvml", None)
    with tracker.start_run(system_metrics=0.01) as run:
        threading.Event().wait(0.1)
    assert tracker.open_store(tmp_store).run(run.id).schemas() == []


# --- the GPU path, through a fake NVML -----------------------------------------------------------

class FakeNvml:
    """The part of pynvml the sampler uses: two GPUs, one with an energy counter; GPU 1 can vanish."""

    NVML_TEMPERATURE_GPU = 0

    class NVMLError(Exception):
        pass

    def __init__(self) -> None:
        self.energy_mj = 5_000_000
        self.gone: set[int] = set()
        self.shutdown = False

    def nvmlDeviceGetCount(self) -> int:
        return 2

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, h: int) -> bytes:
        return f"Fake GPU {h}".encode()

    def _check(self, h: int) -> None:
        if h in self.gone:
            raise self.NVMLError("GPU is lost")

    def nvmlDeviceGetUtilizationRates(self, h: int):
        self._check(h)
        return types.SimpleNamespace(gpu=40 + 20 * h, memory=10)

    def nvmlDeviceGetMemoryInfo(self, h: int):
        self._check(h)
        return types.SimpleNamespace(used=(1 + h) << 30, total=16 << 30, free=0)

    def nvmlDeviceGetTemperature(self, h: int, sensor: int) -> int:
        self._check(h)
        return 60

    def nvmlDeviceGetPowerUsage(self, h: int) -> int:
        self._check(h)
        return 150_000  # mW

    def nvmlDeviceGetTotalEnergyConsumption(self, h: int) -> int:
        self._check(h)
        if h == 1:
            raise self.NVMLError("Not Supported")
        return self.energy_mj

    def nvmlShutdown(self) -> None:
        self.shutdown = True


def test_gpu_path_through_a_fake_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    monkeypatch.setattr("tracker.capture.system.time.monotonic", lambda: clock[0])
    nv = FakeNvml()
    got: list[tuple[str, dict]] = []
    s = Sampler(lambda schema, data: got.append((schema, data)), 10.0, psutil=None, nvml=nv)
    s._setup()
    assert s.active
    for _ in range(3):
        clock[0] += 10.0
        nv.energy_mj += 1_500_000  # 1500 J per 10 s on GPU 0 (its counter)
        s.sample()
    nv.gone.add(1)
    clock[0] += 10.0
    nv.energy_mj += 1_500_000
    s.sample()
    gpu = [d for schema, d in got if schema == "system.gpu"]
    assert [d["index"] for d in gpu] == [0, 1, 0, 1, 0, 1, 0]  # GPU 1 stopped after it vanished
    g0 = [d for d in gpu if d["index"] == 0]
    g1 = [d for d in gpu if d["index"] == 1]
    assert [d["energy_j"] for d in g0] == [1500.0, 3000.0, 4500.0, 6000.0]  # NVML's counter
    # GPU 1 has no counter: energy integrated from 150 W (the first interval at the first reading).
    assert [d["energy_j"] for d in g1] == [1500.0, 3000.0, 4500.0]
    assert g0[0] == {"index": 0, "name": "Fake GPU 0", "utilization_percent": 40.0,
                     "memory_used_bytes": 1 << 30, "memory_total_bytes": 16 << 30, "temperature_c": 60.0,
                     "power_w": 150.0, "energy_j": 1500.0}
    s.stop()
    assert not nv.shutdown  # a module handed in is the caller's to shut down


def test_gpu_records_in_a_run_and_their_summary(tmp_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nv = FakeNvml()
    from tracker import capture

    real = capture.system.Sampler

    def with_fake_nvml(emit, interval, **kw):
        return real(emit, interval, nvml=nv, **kw)

    monkeypatch.setattr(capture.system, "Sampler", with_fake_nvml)
    with tracker.start_run(system_metrics=0.05) as run:
        run.log({"loss": 1.0}, step=12)
        threading.Event().wait(0.5)
    view = tracker.open_store(tmp_store).run(run.id)
    gpu = list(view.records("system.gpu"))
    assert len(gpu) >= 4 and {r.data["index"] for r in gpu} == {0, 1}
    [summary] = view.summarize("system.gpu")
    rows = {r["gpu"]: r for r in summary.rows}
    assert rows[0]["mean_utilization_percent"] == 40.0 and rows[1]["mean_utilization_percent"] == 60.0
    assert rows[1]["peak_memory_bytes"] == 2 << 30
    assert rows[0]["energy_kwh"] == 0.0  # the fake counter did not move
    assert rows[1]["energy_kwh"] == pytest.approx(max(r.data["energy_j"] for r in gpu if r.data["index"] == 1)
                                                  / 3.6e6)
    assert rows[1]["energy_kwh"] > 0
    info = view.info
    assert info.system["gpus"] == 2 and info.system["gpu_utilization_mean"] == pytest.approx(50.0)
    assert info.system["gpu_memory_peak_bytes"] == 2 << 30
    assert info.system["gpu_energy_kwh"] == pytest.approx(rows[1]["energy_kwh"])


def test_system_figures_of_several_writers_combine() -> None:
    from tracker.capture.system import combine_totals

    got = combine_totals([{"samples": 1, "cpu_percent_mean": 10.0, "cpu_percent_peak": 10.0, "gpu_energy_kwh": 1.0},
                          {"samples": 3, "cpu_percent_mean": 50.0, "cpu_percent_peak": 90.0, "gpu_energy_kwh": 2.0}])
    assert got == {"samples": 4, "cpu_percent_mean": 40.0, "cpu_percent_peak": 90.0, "gpu_energy_kwh": 3.0}
