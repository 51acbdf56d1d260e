"""System metrics: a background thread samples the machine, the process and the GPUs.

One :class:`Sampler` per run, started by ``start_run`` when psutil is
installed and ``[system] enabled`` (the default), every ``[system] interval``
seconds (10 by default), the first sample one interval after the start. Each
sample is one ``system`` record and one ``system.gpu`` record per GPU, handed
to ``emit(schema, data)``; the run writes them at its latest step without
advancing the automatic step.

The sampler never makes a run fail: a counter that cannot be read is left out
of that sample (its field is null), a GPU that disappears stops its records,
and without psutil or NVML there are no records and one debug line. psutil
and the NVML module are parameters (``psutil=``, ``nvml=``), so tests can
hand in a raising psutil or a fake NVML.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from tracker.read.segment import combine_totals  # noqa: F401 - where the capture package looked for it

log = logging.getLogger("tracker.system")

#: Default seconds between samples.
DEFAULT_INTERVAL = 10.0
_UNSET: Any = object()


def load_psutil() -> Any:
    """The psutil module, or ``None`` (one debug line) when it is not installed."""
    try:
        import psutil
    except ImportError:
        log.debug('system metrics off: psutil is not installed (pip install "tracker-core[system]")')
        return None
    return psutil


def load_nvml() -> Any:
    """The initialised NVML module (nvidia-ml-py), or ``None`` when absent or without a GPU (one debug line)."""
    try:
        import pynvml
    except ImportError:
        log.debug("GPU metrics off: nvidia-ml-py is not installed")
        return None
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - no driver, no GPU: NVMLError of many kinds
        log.debug("GPU metrics off: NVML cannot start: %s", exc)
        return None
    return pynvml


def _try(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception:  # noqa: BLE001 - a counter that cannot be read is left out of the sample
        return None


class _Gpu:
    """One GPU's handle, name and energy bookkeeping."""

    def __init__(self, index: int, handle: Any, name: str | None, counter_mj: int | None, now: float) -> None:
        self.index = index
        self.handle = handle
        self.name = name
        self.counter0 = counter_mj  # NVML's energy counter (mJ) at the start, when it has one
        self.energy_j = 0.0          # integrated from power when there is no counter
        self.last_power: float | None = None
        self.last_t = now


class Sampler:
    """Samples system, process and GPU figures every ``interval`` seconds on a daemon thread.

    :param emit: ``emit(schema, data)`` writes one record; its exceptions are logged and the thread goes on.
    :param interval: seconds between samples (> 0).
    :param psutil: the psutil module (default: imported when installed; ``None``: no system records).
    :param nvml: an initialised NVML module (default: pynvml when present; ``None``: no GPU records).
    :param pid: the process to follow (default: this one).
    """

    def __init__(self, emit: Callable[[str, dict[str, Any]], Any], interval: float = DEFAULT_INTERVAL, *,
                 psutil: Any = _UNSET, nvml: Any = _UNSET, pid: int | None = None) -> None:
        if not interval > 0:
            raise ValueError(f"interval: expected a positive number of seconds, given {interval!r}")
        self.emit = emit
        self.interval = float(interval)
        self.psutil = load_psutil() if psutil is _UNSET else psutil
        self._nvml_arg = nvml
        self.nvml: Any = None
        self.pid = os.getpid() if pid is None else pid
        self._owner = os.getpid()  # a forked child inherits this object, not its thread
        self.samples = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._proc: Any = None
        self._base: dict[str, float] = {}
        self._gpus: list[_Gpu] = []
        self._acc: dict[str, float] = {}
        self._gpu_acc: dict[int, dict[str, float]] = {}

    @property
    def active(self) -> bool:
        """Whether there is anything to sample (psutil or a GPU)."""
        return self.psutil is not None or bool(self._gpus)

    def start(self) -> bool:
        """Take the baselines and start the thread; ``False`` (and no thread) when nothing can be sampled."""
        self._setup()
        if not self.active:
            return False
        self._thread = threading.Thread(target=self._loop, name="tracker-system-sampler", daemon=True)
        self._thread.start()
        return True

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread (idempotent) and shut NVML down if this sampler started it."""
        self._stop.set()
        t = self._thread
        if t is not None and t is not threading.current_thread() and os.getpid() == self._owner:
            t.join(timeout)
        self._thread = None
        if self.nvml is not None and self._nvml_arg is _UNSET and os.getpid() == self._owner:
            _try(self.nvml.nvmlShutdown)
        self.nvml = None

    def _setup(self) -> None:
        ps = self.psutil
        if ps is not None:
            try:
                self._proc = ps.Process(self.pid)
                # The first cpu_percent calls only set the baseline that the first sample is measured from.
                _try(lambda: ps.cpu_percent(interval=None))
                _try(lambda: self._proc.cpu_percent(interval=None))
            except Exception as exc:  # noqa: BLE001 - psutil broken here: no system records
                log.debug("system metrics off: psutil cannot read this process: %s", exc)
                self.psutil = None
                self._proc = None
            else:
                disk = _try(lambda: ps.disk_io_counters())
                if disk is not None:
                    self._base["disk_read_bytes"] = disk.read_bytes
                    self._base["disk_write_bytes"] = disk.write_bytes
                net = _try(lambda: ps.net_io_counters())
                if net is not None:
                    self._base["net_sent_bytes"] = net.bytes_sent
                    self._base["net_recv_bytes"] = net.bytes_recv
        self.nvml = load_nvml() if self._nvml_arg is _UNSET else self._nvml_arg
        nv = self.nvml
        if nv is None:
            return
        count = _try(nv.nvmlDeviceGetCount)
        if not count:
            log.debug("GPU metrics off: NVML sees no GPU")
            return
        now = time.monotonic()
        for i in range(count):
            h = _try(lambda i=i: nv.nvmlDeviceGetHandleByIndex(i))
            if h is None:
                continue
            name = _try(lambda h=h: nv.nvmlDeviceGetName(h))
            if isinstance(name, bytes):
                name = name.decode("utf-8", "replace")
            counter = _try(lambda h=h: nv.nvmlDeviceGetTotalEnergyConsumption(h))
            self._gpus.append(_Gpu(i, h, name, counter, now))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.sample()
            except Exception as exc:  # noqa: BLE001 - the sampler never makes a run fail
                log.debug("system sample failed: %s", exc)

    def sample(self) -> list[tuple[str, dict[str, Any]]]:
        """Take one sample now and emit it: the ``(schema, data)`` pairs emitted."""
        out = []
        if self.psutil is not None:
            out.append(("system", self.system_sample()))
        for _gpu, data in self.gpu_samples():
            out.append(("system.gpu", data))
        for schema, data in out:
            try:
                self.emit(schema, data)
            except Exception as exc:  # noqa: BLE001 - a write error must not end the thread
                log.debug("system record not written: %s", exc)
            else:
                self._account(schema, data)
        self.samples += 1
        return out

    def _account(self, schema: str, d: dict[str, Any]) -> None:
        if schema == "system":
            acc = self._acc
            acc["samples"] = acc.get("samples", 0) + 1
            cpu = d.get("cpu_percent")
            if cpu is not None:
                acc["cpu_sum"] = acc.get("cpu_sum", 0.0) + cpu
                acc["cpu_n"] = acc.get("cpu_n", 0) + 1
                acc["cpu_percent_peak"] = max(acc.get("cpu_percent_peak", cpu), cpu)
            for key, peak in (("process_rss_bytes", "process_rss_peak_bytes"),
                              ("memory_used_bytes", "memory_used_peak_bytes")):
                v = d.get(key)
                if v is not None:
                    acc[peak] = max(acc.get(peak, v), v)
        else:
            g = self._gpu_acc.setdefault(d["index"], {})
            util, mem, energy = d.get("utilization_percent"), d.get("memory_used_bytes"), d.get("energy_j")
            if util is not None:
                g["util_sum"] = g.get("util_sum", 0.0) + util
                g["util_n"] = g.get("util_n", 0) + 1
            if mem is not None:
                g["mem_peak"] = max(g.get("mem_peak", mem), mem)
            if energy is not None:
                g["energy_j"] = energy

    def totals(self) -> dict[str, float | int]:
        """The run's figures so far, for its finish event and the runs table.

        ``samples``, ``cpu_percent_mean``, ``cpu_percent_peak``,
        ``process_rss_peak_bytes``, ``memory_used_peak_bytes``; with GPUs
        ``gpus``, ``gpu_utilization_mean`` (over every GPU's samples),
        ``gpu_memory_peak_bytes`` (the largest of any GPU) and
        ``gpu_energy_kwh`` (all GPUs together). A figure never read is left out.
        """
        acc = self._acc
        out: dict[str, float | int] = {}
        if os.getpid() != self._owner:
            return out  # a forked child's copy: the parent reports these figures
        if acc.get("samples"):
            out["samples"] = int(acc["samples"])
        if acc.get("cpu_n"):
            out["cpu_percent_mean"] = acc["cpu_sum"] / acc["cpu_n"]
        for key in ("cpu_percent_peak", "process_rss_peak_bytes", "memory_used_peak_bytes"):
            if key in acc:
                out[key] = acc[key]
        gpus = self._gpu_acc.values()
        if gpus:
            out["gpus"] = len(self._gpu_acc)
            n = sum(g.get("util_n", 0) for g in gpus)
            if n:
                out["gpu_utilization_mean"] = sum(g.get("util_sum", 0.0) for g in gpus) / n
            peaks = [g["mem_peak"] for g in gpus if "mem_peak" in g]
            if peaks:
                out["gpu_memory_peak_bytes"] = max(peaks)
            energy = [g["energy_j"] for g in gpus if "energy_j" in g]
            if energy:
                out["gpu_energy_kwh"] = sum(energy) / 3.6e6
        return out

    def system_sample(self) -> dict[str, Any]:
        """One ``system`` record's fields; a counter that cannot be read is ``None``."""
        ps, proc = self.psutil, self._proc
        d: dict[str, Any] = {}
        cpu = _try(lambda: ps.cpu_percent(interval=None))
        d["cpu_percent"] = float(cpu) if cpu is not None else None
        vm = _try(ps.virtual_memory)
        d["memory_used_bytes"] = _int(getattr(vm, "used", None))
        d["memory_percent"] = _float(getattr(vm, "percent", None))
        mi = _try(proc.memory_info) if proc is not None else None
        d["process_rss_bytes"] = _int(getattr(mi, "rss", None))
        pc = _try(lambda: proc.cpu_percent(interval=None)) if proc is not None else None
        d["process_cpu_percent"] = _float(pc)
        disk = _try(ps.disk_io_counters)
        net = _try(ps.net_io_counters)
        for key, obj, attr in (("disk_read_bytes", disk, "read_bytes"), ("disk_write_bytes", disk, "write_bytes"),
                               ("net_sent_bytes", net, "bytes_sent"), ("net_recv_bytes", net, "bytes_recv")):
            v = _int(getattr(obj, attr, None))
            base = self._base.get(key)
            d[key] = None if v is None or base is None else max(0, v - int(base))
        return d

    def gpu_samples(self) -> list[tuple[_Gpu, dict[str, Any]]]:
        """One ``system.gpu`` record per GPU still there; a GPU that cannot be read at all is dropped."""
        nv = self.nvml
        out = []
        now = time.monotonic()
        for gpu in list(self._gpus):
            h = gpu.handle
            util = _try(lambda h=h: nv.nvmlDeviceGetUtilizationRates(h))
            mem = _try(lambda h=h: nv.nvmlDeviceGetMemoryInfo(h))
            temp = _try(lambda h=h: nv.nvmlDeviceGetTemperature(h, getattr(nv, "NVML_TEMPERATURE_GPU", 0)))
            power_mw = _try(lambda h=h: nv.nvmlDeviceGetPowerUsage(h))
            counter = _try(lambda h=h: nv.nvmlDeviceGetTotalEnergyConsumption(h)) \
                if gpu.counter0 is not None else None
            if util is None and mem is None and temp is None and power_mw is None and counter is None:
                # Every counter failed: the GPU is gone (or lost); its records stop.
                log.debug("GPU %s stopped answering; no more records for it", gpu.index)
                self._gpus.remove(gpu)
                continue
            power = power_mw / 1000.0 if power_mw is not None else None
            if counter is not None:
                energy = max(0.0, (counter - gpu.counter0) / 1000.0)
            else:
                if power is not None:
                    # Trapezoids between samples; the first interval counts at the first reading.
                    prev = gpu.last_power if gpu.last_power is not None else power
                    gpu.energy_j += (prev + power) / 2.0 * (now - gpu.last_t)
                    gpu.last_power = power
                energy = gpu.energy_j if gpu.last_power is not None else None
            gpu.last_t = now
            out.append((gpu, {
                "index": gpu.index, "name": gpu.name or "",
                "utilization_percent": _float(getattr(util, "gpu", None)),
                "memory_used_bytes": _int(getattr(mem, "used", None)),
                "memory_total_bytes": _int(getattr(mem, "total", None)),
                "temperature_c": _float(temp), "power_w": power, "energy_j": energy,
            }))
        return out


def _int(v: Any) -> int | None:
    try:
        return None if v is None else int(v)
    except (TypeError, ValueError):
        return None


def _float(v: Any) -> float | None:
    try:
        return None if v is None else float(v)
    except (TypeError, ValueError):
        return None


def resolve_interval(system_metrics: Any, config: Any) -> float | None:
    """Seconds between samples from ``start_run(system_metrics=)`` and tracker.toml's ``[system]``; None: off.

    :raises TypeError: ``system_metrics`` is not None, False, True or a positive number.
    """
    if system_metrics is None or system_metrics is True:
        if not getattr(config, "system_enabled", True):
            return None if system_metrics is None else float(getattr(config, "system_interval", DEFAULT_INTERVAL))
        return float(getattr(config, "system_interval", DEFAULT_INTERVAL))
    if system_metrics is False:
        return None
    if type(system_metrics) in (int, float) and system_metrics > 0:
        return float(system_metrics)
    raise TypeError(f"system_metrics: expected None, False, True or a positive number of seconds, "
                    f"given {system_metrics!r}")
