"""quantize_model(), QuantizedModel totals and its binary file."""

import struct
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tracker_ptq import FORMAT_VERSION, ModelFileError, QuantizedModel, quantize_model


def small_model(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "fc1": (rng.normal(size=(16, 8)), rng.normal(size=16)),
        "fc2": (rng.normal(size=(4, 16)) * 10, None),
        "conv": rng.normal(size=(3, 2, 3, 3)),
        "vec": (rng.normal(size=5),),
    }


def assert_same(a: QuantizedModel, b: QuantizedModel) -> None:
    assert list(a) == list(b)
    for name in a:
        x, y = a[name], b[name]
        assert x.scheme == y.scheme and x.name == y.name
        assert y.q.dtype == np.int8
        np.testing.assert_array_equal(x.q, y.q)
        np.testing.assert_array_equal(x.scales, y.scales)
        if x.bias is None:
            assert y.bias is None
        else:
            np.testing.assert_array_equal(x.bias, y.bias)


def test_totals_are_sums_over_layers():
    model = quantize_model(small_model())
    assert len(model) == 4
    int8 = 16 * 8 + 64 + 54 + 5
    assert model.size_bytes == int8
    assert model.original_size_bytes == 4 * int8
    assert model.compression_ratio == 4.0
    assert model.overhead_bytes == 4 * (1 + 16) + 4 + 4 + 4


def test_per_channel_model_keeps_vectors_per_tensor():
    model = quantize_model(small_model(), per_channel=True)
    assert model["fc1"].scales.shape == (16,)
    assert model["conv"].scales.shape == (3,)
    assert not model["vec"].per_channel


def test_dequantize_returns_weights_and_bias():
    layers = small_model()
    out = quantize_model(layers).dequantize()
    assert out["fc2"][1] is None
    np.testing.assert_allclose(out["fc1"][1], layers["fc1"][1].astype(np.float32))
    assert out["conv"][0].shape == (3, 2, 3, 3)


@pytest.mark.parametrize("per_channel", [False, True])
def test_save_load_round_trip(tmp_path, per_channel):
    model = quantize_model(small_model(), per_channel=per_channel)
    path = tmp_path / "model.ptq"
    size = model.save(path)
    assert size == path.stat().st_size
    # int8 stays one byte a weight: the file is the weights, the float32 scales
    # and biases, and a small header.
    assert size == model.file_bytes
    stored = model.size_bytes + model.overhead_bytes
    assert stored < size < stored + 200
    assert_same(model, QuantizedModel.load(path))
    assert list(tmp_path.iterdir()) == [path]


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.text(min_size=1, max_size=20), st.booleans())
def test_round_trip_any_names_and_data(seed, name, per_channel):
    rng = np.random.default_rng(seed)
    model = quantize_model({name: (rng.normal(size=(3, 4)) * rng.uniform(0.01, 100),
                                   rng.normal(size=3))}, per_channel=per_channel)
    assert_same(model, QuantizedModel.from_bytes(model.to_bytes()))


def test_every_flipped_byte_is_detected():
    data = quantize_model({"a": np.arange(6.0).reshape(2, 3)}).to_bytes()
    for i in range(len(data)):
        damaged = bytearray(data)
        damaged[i] ^= 0x40
        with pytest.raises(ModelFileError):
            QuantizedModel.from_bytes(bytes(damaged))


def test_every_truncation_is_detected():
    data = quantize_model(small_model()).to_bytes()
    for n in range(len(data)):
        with pytest.raises(ModelFileError):
            QuantizedModel.from_bytes(data[:n])


@pytest.mark.parametrize(("data", "message"), [
    (b"", "not a tracker-ptq model file"),
    (b"PK\x03\x04 a zip file, not a model", "not a tracker-ptq model file"),
    (b'{"fc1": [1, 2, 3]}', "not a tracker-ptq model file"),
])
def test_foreign_files_are_refused(tmp_path, data, message):
    path = tmp_path / "foreign.bin"
    path.write_bytes(data)
    with pytest.raises(ModelFileError, match=message) as info:
        QuantizedModel.load(path)
    assert str(path) in str(info.value)


def test_damaged_file_names_the_problem(tmp_path):
    path = tmp_path / "m.ptq"
    quantize_model(small_model()).save(path)
    data = bytearray(path.read_bytes())
    data[40] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(ModelFileError, match="checksum mismatch"):
        QuantizedModel.load(path)
    path.write_bytes(bytes(data[:30]))
    with pytest.raises(ModelFileError, match="checksum mismatch"):
        QuantizedModel.load(path)


def test_future_version_is_refused():
    body = b"TRKPTQ" + struct.pack("<HI", FORMAT_VERSION + 1, 0)
    with pytest.raises(ModelFileError, match="unsupported format version 2"):
        QuantizedModel.from_bytes(body + struct.pack("<I", zlib.crc32(body)))


def test_intact_checksum_with_bad_lengths_is_still_refused():
    # A file whose checksum matches but whose layer claims more bytes than exist.
    body = b"TRKPTQ" + struct.pack("<HI", FORMAT_VERSION, 1) + struct.pack("<H", 1) + b"x"
    body += struct.pack("<BBII", 0, 1, 1000, 1) + struct.pack("<f", 0.1) + struct.pack("<I", 0)
    with pytest.raises(ModelFileError, match="truncated file: weights of layer 'x'"):
        QuantizedModel.from_bytes(body + struct.pack("<I", zlib.crc32(body)))


def test_bad_layer_spec():
    with pytest.raises(ValueError, match="expected \\(weights, bias\\)"):
        quantize_model({"a": (np.ones(2), None, None)})
