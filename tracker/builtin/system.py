"""Built-in ``system`` and ``system.gpu`` schemas: the sampler's records, and their peaks and means.

The records are written by the system sampler (``tracker.capture.system``)
at the run's latest step; a counter that could not be read is null.
"""

from __future__ import annotations

import attrs

from tracker import Schema, Summarizer, Summary, Table, hookimpl

_nonneg = attrs.validators.optional(attrs.validators.ge(0))


@attrs.frozen(kw_only=True)
class SystemSample:
    """One sample of the machine and the logging process (bytes for memory, disk and network)."""

    cpu_percent: float | None = attrs.field(default=None, validator=_nonneg)
    memory_used_bytes: int | None = attrs.field(default=None, validator=_nonneg)
    memory_percent: float | None = attrs.field(default=None, validator=_nonneg)
    process_rss_bytes: int | None = attrs.field(default=None, validator=_nonneg)
    process_cpu_percent: float | None = attrs.field(default=None, validator=_nonneg)
    disk_read_bytes: int | None = attrs.field(default=None, validator=_nonneg)
    disk_write_bytes: int | None = attrs.field(default=None, validator=_nonneg)
    net_sent_bytes: int | None = attrs.field(default=None, validator=_nonneg)
    net_recv_bytes: int | None = attrs.field(default=None, validator=_nonneg)


@attrs.frozen(kw_only=True)
class GpuSample:
    """One sample of one GPU (through NVML); energy in joules since the run started."""

    index: int = attrs.field(validator=attrs.validators.ge(0))
    name: str = ""
    utilization_percent: float | None = attrs.field(default=None, validator=_nonneg)
    memory_used_bytes: int | None = attrs.field(default=None, validator=_nonneg)
    memory_total_bytes: int | None = attrs.field(default=None, validator=_nonneg)
    temperature_c: float | None = None
    power_w: float | None = attrs.field(default=None, validator=_nonneg)
    energy_j: float | None = attrs.field(default=None, validator=_nonneg)


@hookimpl
def tracker_schemas() -> list[Schema]:
    return [Schema("system", SystemSample, description="CPU, memory, disk and network, sampled during the run"),
            Schema("system.gpu", GpuSample, description="one GPU's utilization, memory, power and energy")]


@hookimpl
def tracker_summarizers() -> list[Summarizer]:
    return [Summarizer("system.peaks", "system", summarize_system,
                       "peak and mean CPU, memory and process memory; disk and network totals"),
            Summarizer("system.gpu", "system.gpu", summarize_gpu,
                       "per GPU: mean utilization, peak memory, mean power, energy in kWh")]


def _col(table: Table, name: str):  # noqa: ANN202 - a numpy array
    import numpy as np

    col = table[name]
    if hasattr(col, "dtype"):
        return col.astype(np.float64)
    return np.array([np.nan if v is None else float(v) for v in col], dtype=np.float64)


def _stat(fn, col) -> float | None:  # noqa: ANN001
    import numpy as np

    ok = col[~np.isnan(col)]
    return float(fn(ok)) if ok.size else None


def summarize_system(table: Table) -> Summary:
    """Per figure: samples, mean, peak and last (bytes for memory, percent for CPU)."""
    import numpy as np

    rows = []
    for name in ("cpu_percent", "process_cpu_percent", "memory_used_bytes", "memory_percent",
                 "process_rss_bytes", "disk_read_bytes", "disk_write_bytes", "net_sent_bytes", "net_recv_bytes"):
        col = _col(table, name)
        ok = col[~np.isnan(col)]
        rows.append({"metric": name, "samples": int(ok.size), "mean": _stat(np.mean, col),
                     "peak": _stat(np.max, col), "last": float(ok[-1]) if ok.size else None})
    return Summary("System", rows, columns=["metric", "samples", "mean", "peak", "last"],
                   notes=("memory, disk and network in bytes; disk and network counted from the run's start",))


def summarize_gpu(table: Table) -> Summary:
    """Per GPU: samples, mean utilization, peak memory, mean and peak power, energy in kWh."""
    import numpy as np

    index = np.asarray(table["index"], dtype=np.int64)
    names = table["name"]
    util, mem, power, energy = (_col(table, n) for n in
                                ("utilization_percent", "memory_used_bytes", "power_w", "energy_j"))
    rows = []
    for i in sorted(set(index.tolist())):
        sel = index == i
        e = _stat(np.max, energy[sel])
        rows.append({"gpu": i, "name": next((n for n, s in zip(names, sel, strict=True) if s), ""),
                     "samples": int(sel.sum()), "mean_utilization_percent": _stat(np.mean, util[sel]),
                     "peak_memory_bytes": _stat(np.max, mem[sel]), "mean_power_w": _stat(np.mean, power[sel]),
                     "energy_kwh": None if e is None else e / 3.6e6})
    return Summary("GPUs", rows, columns=["gpu", "name", "samples", "mean_utilization_percent",
                                          "peak_memory_bytes", "mean_power_w", "energy_kwh"])
