"""Typed records: ``run.log_record`` of a 6-float schema next to the floor.

The schema ``bench.point`` (six float fields, four of them with a range
validator, like ``fft.loss_point``) is registered by a plugin defined here;
``fft.loss_point`` itself is measured too when the fft_study plugin is
installed. The floor is ``orjson.dumps`` + ``os.write`` of the same six fields.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import attrs

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    FLOOR_ENCODER,
    FloorWriter,
    emit,
    main_guard,
    parse_args,
    per_call,
    scratch,
    side_by_side,
)

import tracker  # noqa: E402


def _non_negative(instance: object, attribute: attrs.Attribute, value: float) -> None:
    if value < 0:
        raise ValueError(f"expected >= 0 (or NaN), given {value!r}")


def _unit(instance: object, attribute: attrs.Attribute, value: float) -> None:
    if not (math.isnan(value) or 0.0 <= value <= 1.0):
        raise ValueError(f"expected a value in [0, 1] (or NaN), given {value!r}")


@attrs.frozen(kw_only=True)
class Point:
    """Six floats, four validated: the shape of ``fft.loss_point``."""

    total_loss: float
    val_loss: float
    mel_err: float = attrs.field(validator=_non_negative)
    spec_err: float = attrs.field(validator=_non_negative)
    welch_err: float = attrs.field(validator=_non_negative)
    mean_gate: float = attrs.field(validator=_unit)


class BenchPlugin:
    """Registers ``bench.point``."""

    @tracker.hookimpl
    def tracker_schemas(self) -> list[tracker.Schema]:
        return [tracker.Schema("bench.point", Point, description="six floats (benchmark)")]


POINT = {"total_loss": 0.41, "val_loss": 0.45, "mel_err": 0.12, "spec_err": 0.08, "welch_err": 0.05,
         "mean_gate": 0.7}
FFT_POINT = {"total_loss": 0.41, "mel_err": 0.12, "spec_err": 0.08, "welch_err": 0.05, "mean_gate": 0.7}


def body(args) -> None:  # noqa: ANN001 - argparse namespace
    n = 2_000 if args.quick else 20_000
    pm = tracker.get_plugin_manager()
    pm.add_plugin(BenchPlugin(), "bench")
    tracker.set_host(tracker.Host(pm))
    floor_name = f"{FLOOR_ENCODER} + os.write"
    with scratch() as tmp:
        floor = FloorWriter(tmp / "floor")
        with tracker.start_run(project="bench", name="records", store=tmp / "store", system_metrics=False) as run:
            log_record = run.log_record
            log_record("bench.point", **POINT)
            res = side_by_side(lambda: per_call(lambda i: log_record("bench.point", **POINT), n),
                               lambda: floor.run(POINT, n), args.repeat)
            emit("records", "run.log_record, bench.point (6 floats), keywords", unit="us/call", calls=n,
                 clock="cpu", floor_name=floor_name, target=3.0, **res)
            res = side_by_side(lambda: per_call(lambda i: log_record("bench.point", POINT), n),
                               lambda: floor.run(POINT, n), args.repeat)
            emit("records", "run.log_record, bench.point (6 floats), a mapping", unit="us/call", calls=n,
                 clock="cpu", floor_name=floor_name, target=3.0, **res)
            inst = Point(**POINT)
            res = side_by_side(lambda: per_call(lambda i: log_record(inst), n),
                               lambda: floor.run(POINT, n), args.repeat)
            emit("records", "run.log_record, bench.point (6 floats), an attrs instance", unit="us/call",
                 calls=n, clock="cpu", floor_name=floor_name, **res)
            if "fft.loss_point" in tracker.get_host().schemas:
                log_record("fft.loss_point", **FFT_POINT)
                full = {"model_id": "", **FFT_POINT}
                res = side_by_side(lambda: per_call(lambda i: log_record("fft.loss_point", **FFT_POINT), n),
                                   lambda: floor.run(full, n), args.repeat)
                emit("records", "run.log_record, fft.loss_point (model_id + 5 floats), keywords",
                     unit="us/call", calls=n, clock="cpu", floor_name=floor_name, target=3.0, **res)
        floor.close()


if __name__ == "__main__":
    sys.exit(main_guard(body, parse_args(__doc__.splitlines()[0])))
