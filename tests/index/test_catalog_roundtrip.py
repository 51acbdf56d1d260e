"""A run's info and figures come back from the catalog's texts exactly as they went in."""

from __future__ import annotations

import math

import hypothesis.strategies as hs
import orjson
from hypothesis import given, settings

from tests.index.support import norm
from tracker.core.format import encode_nonfinite
from tracker.core.records import RunInfo, run_info_values
from tracker.read.index import catalog

# What a line of the store can hold: orjson writes 64-bit integers.
int64 = hs.integers(-(2**63), 2**63 - 1)
scalar = hs.one_of(hs.none(), hs.booleans(), hs.integers(-(2**53), 2**53), hs.floats(), hs.text(max_size=12),
                   hs.sampled_from(["NaN", "Infinity", "-Infinity"]))
value = hs.recursive(scalar, lambda inner: hs.one_of(hs.lists(inner, max_size=4),
                                                     hs.dictionaries(hs.text(max_size=6), inner, max_size=4)),
                     max_leaves=12)
free = hs.dictionaries(hs.text(max_size=8), value, max_size=5)
opt_float = hs.one_of(hs.none(), hs.floats(allow_nan=False))

infos = hs.builds(
    RunInfo, id=hs.from_regex(r"[a-z0-9]{4,12}", fullmatch=True), name=hs.one_of(hs.none(), hs.text(max_size=20)),
    project=hs.one_of(hs.none(), hs.text(max_size=10)),
    status=hs.sampled_from(["running", "finished", "failed", "crashed"]), created_at=opt_float, ended_at=opt_float,
    config=free, tags=hs.lists(hs.text(max_size=8), max_size=4), error=hs.one_of(hs.none(), free), env=free,
    writers=hs.integers(0, 9), records=hs.integers(0, 2**40), last_step=hs.one_of(hs.none(), hs.integers(-5, 2**40)),
    last_metrics=hs.dictionaries(hs.text(max_size=6), hs.one_of(hs.floats(), int64, hs.booleans()),
                                 max_size=4),
    notes=hs.one_of(hs.none(), hs.text(max_size=30)), summary=free, system=free)

figure = hs.fixed_dictionaries({
    "count": hs.integers(0, 2**40), "first": hs.floats(), "first_step": hs.integers(-5, 2**40),
    "last": hs.floats(), "last_step": hs.integers(-5, 2**40), "min": hs.floats(), "min_step": hs.integers(0, 9),
    "max": hs.floats(), "max_step": hs.integers(0, 9)})


def has_nonfinite(x: object) -> bool:
    if isinstance(x, float):
        return not math.isfinite(x)
    if isinstance(x, dict):
        return any(has_nonfinite(v) for v in x.values())
    if isinstance(x, list):
        return any(has_nonfinite(v) for v in x)
    return False


@settings(max_examples=200, deadline=None)
@given(info=infos, figures=hs.dictionaries(hs.text(max_size=8), figure, max_size=3),
       schemas=hs.dictionaries(hs.text(max_size=8), hs.integers(0, 2**40), max_size=3))
def test_an_entry_comes_back_from_the_catalog_texts_as_it_went_in(info: RunInfo, figures: dict, schemas: dict):
    text, finite = catalog.encode_info(info, schemas)
    back = catalog.decode_info(text, orjson.dumps(encode_nonfinite(figures)))
    # NaN compared as NaN; strings that read like "NaN" stay strings, floats stay floats.
    assert norm(back.info.to_dict()) == norm(info.to_dict())
    assert back.schemas == schemas
    assert norm(back.metrics) == norm(figures)
    assert finite is back.finite is (not has_nonfinite(run_info_values(info)))
