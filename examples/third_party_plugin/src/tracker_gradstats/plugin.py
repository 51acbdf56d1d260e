"""The hooks of the gradstats plugin."""

from __future__ import annotations

import math
import warnings

import numpy as np

from tracker import Event, EventBus, Panel, Schema, Summarizer, Summary, Table, TrackerWarning, hookimpl

from .record import GradNorm

EXPLODING = 10.0


@hookimpl
def tracker_schemas() -> list[Schema]:
    return [Schema("grad.norm", GradNorm, description="per-layer gradient norm, max |g| and share of zeros")]


@hookimpl
def tracker_summarizers() -> list[Summarizer]:
    return [Summarizer("grad.layers", "grad.norm", summarize_layers, "norms per layer, exploding ones flagged")]


@hookimpl
def tracker_panels() -> list[Panel]:
    """The dashboard panel of grad.norm records (``tracker ui``)."""
    from .panel import PANELS

    return list(PANELS)


@hookimpl
def tracker_subscribe(bus: EventBus) -> None:
    bus.subscribe(NanWatch(), kinds=["record", "run_finished"], schemas=None)


class NanWatch:
    """Warns once per run when its ``loss`` metric becomes NaN or infinite."""

    def __init__(self) -> None:
        self.warned: set[str] = set()

    def __call__(self, event: Event) -> None:
        if event.kind == "run_finished":
            self.warned.discard(event.run_id)
            return
        if event.schema != "metrics" or event.run_id in self.warned:
            return
        loss = event.data.get("loss")
        if isinstance(loss, float) and not math.isfinite(loss):
            self.warned.add(event.run_id)
            warnings.warn(f"run {event.run_id}: loss is {loss} at step {event.step}", TrackerWarning, stacklevel=2)


def summarize_layers(table: Table) -> Summary:
    """Per layer: records, mean, max and last norm; exploding when last > 10x median."""
    layers = np.asarray(table["layer"])
    norms = table["norm"]
    rows = []
    for layer in dict.fromkeys(table["layer"]):
        n = norms[layers == layer]
        median = float(np.median(n))
        rows.append({"layer": layer, "records": int(n.size), "mean_norm": float(n.mean()),
                     "max_norm": float(n.max()), "last_norm": float(n[-1]),
                     "exploding": bool(median > 0 and n[-1] > EXPLODING * median)})
    flagged = [r["layer"] for r in rows if r["exploding"]]
    notes = [f"exploding: {', '.join(flagged)}"] if flagged else ["no layer's last norm exceeds 10x its median"]
    return Summary("Gradient norms", rows, notes=notes)
