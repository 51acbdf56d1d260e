"""Sizes as in the seed system: int8 weights are one byte, the scale is metadata.

``size_bytes`` counts the int8 weights, ``compression_ratio`` is exactly 4.0
for any int8 tensor against float32, and a model's ratio is its total float32
bytes over its total int8 weight bytes. Scales and biases are the overhead,
their own figure, and the file adds its header and names on top.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from tracker_ptq import QuantizedModel, layer_record, quantize, quantize_model

shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=7)
weights = shapes.flatmap(lambda shape: hnp.arrays(
    np.float64, shape, elements=st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)))


@settings(max_examples=60, deadline=None)
@given(weights, st.booleans(), st.booleans())
def test_one_layer_counts_one_byte_a_weight_and_compresses_exactly_4x(w, per_channel, bias):
    per_channel = per_channel and w.ndim >= 2
    b = np.ones(w.shape[0]) if bias else None
    qw = quantize("w", w, b, per_channel=per_channel)
    assert qw.size_bytes == w.size
    assert qw.original_size_bytes == 4 * w.size
    assert qw.compression_ratio == 4.0
    assert qw.overhead_bytes == 4 * qw.scales.size + (4 * w.shape[0] if bias else 0)
    rec = layer_record(qw, w)
    assert (rec.bytes_fp32, rec.bytes_int8, rec.compression_ratio) == (4 * w.size, w.size, 4.0)


@settings(max_examples=30, deadline=None)
@given(st.lists(weights, min_size=1, max_size=4), st.booleans())
def test_a_model_compresses_exactly_4x_and_its_file_holds_the_overhead(layers, per_channel):
    model = quantize_model({f"l{i}": (w, np.zeros(w.shape[0])) for i, w in enumerate(layers)},
                           per_channel=per_channel)
    total = sum(w.size for w in layers)
    assert model.size_bytes == total and model.original_size_bytes == 4 * total
    assert model.compression_ratio == 4.0
    assert model.overhead_bytes == sum(layer.overhead_bytes for layer in model.layers.values())
    data = model.to_bytes()
    assert model.file_bytes == len(data) > model.size_bytes + model.overhead_bytes
    assert QuantizedModel.from_bytes(data).compression_ratio == 4.0


def test_the_seed_figures_of_a_small_layer():
    # 10x20 weights with a bias of 10: 200 int8 bytes against 800 float32
    # bytes; one float32 scale and the float32 bias are 44 bytes of overhead.
    qw = quantize("fc", np.linspace(-1, 1, 200).reshape(10, 20), np.ones(10))
    assert (qw.size_bytes, qw.original_size_bytes, qw.compression_ratio) == (200, 800, 4.0)
    assert qw.overhead_bytes == 44
