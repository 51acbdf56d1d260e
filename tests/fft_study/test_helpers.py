"""The numpy helpers of tracker_fft_study, checked against numpy.fft and by finite differences."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from tracker_fft_study import (
    FFTHeatmap,
    FFTParams,
    bit_reverse_permutation,
    butterfly_apply,
    butterfly_backward,
    exact_twiddles,
    gate_heatmap,
    learned_model_params,
    mel_filterbank,
    num_stages,
    spectral_errors,
    twiddle_param_count,
)

powers = st.integers(min_value=1, max_value=9).map(lambda k: 2**k)


@pytest.mark.parametrize(("n", "stages"), [(2, 1), (4, 2), (64, 6), (1024, 10)])
def test_num_stages(n, stages):
    assert num_stages(n) == stages
    assert num_stages(np.int64(n)) == stages


@pytest.mark.parametrize("bad", [0, 1, 3, 6, 48, -4, 2.0, True, "8", None])
def test_num_stages_rejects(bad):
    with pytest.raises(ValueError, match="n_fft: expected"):
        num_stages(bad)


@given(powers)
def test_num_stages_is_log2(n):
    assert 2 ** num_stages(n) == n


def test_exact_twiddles_values_and_shape():
    tw = exact_twiddles(8)
    assert tw.shape == (3, 4, 2)
    # Stage 0: every butterfly has k = 0, twiddle 1.
    np.testing.assert_allclose(tw[0], [[1, 0]] * 4)
    # Stage 2 (m = 4): k = 0..3, angles -2*pi*k/8.
    expected = np.exp(-2j * np.pi * np.arange(4) / 8)
    np.testing.assert_allclose(tw[2, :, 0] + 1j * tw[2, :, 1], expected, atol=1e-15)
    np.testing.assert_allclose(np.hypot(tw[..., 0], tw[..., 1]), 1.0)


@settings(max_examples=40, deadline=None)
@given(powers, st.integers(min_value=0, max_value=2**32 - 1))
def test_exact_twiddles_reproduce_numpy_fft(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(3, n)) + 1j * rng.normal(size=(3, n))
    got = butterfly_apply(x, exact_twiddles(n))
    np.testing.assert_allclose(got, np.fft.fft(x), atol=1e-9 * n)


def test_exact_twiddles_with_unit_gates_are_the_fft():
    n = 32
    x = np.random.default_rng(1).normal(size=(4, n))
    gates = np.ones(num_stages(n) * n // 2)
    np.testing.assert_allclose(butterfly_apply(x, exact_twiddles(n), gates), np.fft.fft(x),
                               atol=1e-10)


def test_zero_gates_pass_input_through_in_bit_reversed_order():
    n = 16
    x = np.arange(n, dtype=float)
    y = butterfly_apply(x, exact_twiddles(n), np.zeros((num_stages(n), n // 2)))
    np.testing.assert_array_equal(y.real, x[bit_reverse_permutation(n)])


def test_bit_reverse_permutation():
    np.testing.assert_array_equal(bit_reverse_permutation(8), [0, 4, 2, 6, 1, 5, 3, 7])


@given(powers)
def test_bit_reverse_is_an_involution(n):
    perm = bit_reverse_permutation(n)
    np.testing.assert_array_equal(perm[perm], np.arange(n))


@given(powers)
def test_twiddle_param_count_matches_twiddle_array(n):
    assert twiddle_param_count(n) == exact_twiddles(n).size == num_stages(n) * n


def test_learned_model_params_breakdown():
    counts = learned_model_params(64, 40)
    total = 384 + 192 + 128 + 256 + 40 * 33
    assert counts == {
        "twiddles": 6 * 32 * 2,
        "gates": 6 * 32,
        "freq_mask": 128,
        "denoiser": 256,
        "unitary": 0,
        "mel_filters": 40 * 33,
        "q8_packed": 0,
        "total_params": total,
        "memory_bytes": 4 * total,
    }


@given(powers, st.integers(min_value=0, max_value=512))
def test_learned_model_params_total_and_memory(n, n_mels):
    counts = learned_model_params(n, n_mels)
    stages = num_stages(n)
    total = stages * n + stages * n // 2 + 6 * n + n_mels * (n // 2 + 1)
    parts = {k: v for k, v in counts.items() if k not in ("total_params", "memory_bytes")}
    assert sum(parts.values()) == counts["total_params"] == total
    assert counts["memory_bytes"] == 4 * total
    # The breakdown still builds the fft.params record, which derives the same figures.
    rec = FFTParams(model_id="m", variant="learned", n_fft=n, **counts)
    assert (rec.total_params, rec.memory_bytes) == (total, 4 * total)


@pytest.mark.parametrize("n_mels", [-1, 2.5, True])
def test_learned_model_params_rejects_bad_mels(n_mels):
    with pytest.raises(ValueError, match="n_mels: expected an int >= 0"):
        learned_model_params(64, n_mels)


def test_butterfly_apply_rejects_wrong_shapes():
    with pytest.raises(ValueError, match=r"twiddles: expected shape \(3, 4, 2\)"):
        butterfly_apply(np.zeros(8), np.zeros((3, 3, 2)))
    with pytest.raises(ValueError, match="gates: expected stages\\*butterflies = 12 values"):
        butterfly_apply(np.zeros(8), exact_twiddles(8), np.ones(10))


def _loss(x, tw, gates, target):
    return float(np.sum(np.abs(butterfly_apply(x, tw, gates) - target) ** 2))


@pytest.mark.parametrize("gated", [False, True])
def test_backward_matches_finite_differences(gated):
    rng = np.random.default_rng(7)
    n = 8
    x = rng.normal(size=(5, n))
    target = np.fft.fft(rng.normal(size=(5, n)))
    tw = rng.normal(size=(3, 4, 2))
    gates = rng.uniform(0.1, 0.9, size=12) if gated else None
    y = butterfly_apply(x, tw, gates)
    grad_tw, grad_g = butterfly_backward(x, tw, gates, 2 * (y - target))
    eps = 1e-6
    numeric = np.zeros_like(tw)
    for i in np.ndindex(tw.shape):
        d = np.zeros_like(tw)
        d[i] = eps
        numeric[i] = (_loss(x, tw + d, gates, target) - _loss(x, tw - d, gates, target)) / (2 * eps)
    np.testing.assert_allclose(grad_tw, numeric, rtol=1e-5, atol=1e-6)
    if not gated:
        assert grad_g is None
        return
    numeric_g = np.zeros_like(gates)
    for i in range(gates.size):
        d = np.zeros_like(gates)
        d[i] = eps
        up, down = _loss(x, tw, gates + d, target), _loss(x, tw, gates - d, target)
        numeric_g[i] = (up - down) / (2 * eps)
    np.testing.assert_allclose(grad_g.reshape(-1), numeric_g, rtol=1e-5, atol=1e-6)


def test_backward_is_zero_at_the_exact_solution():
    n = 16
    x = np.random.default_rng(3).normal(size=(4, n))
    y = butterfly_apply(x, exact_twiddles(n))
    grad_tw, _ = butterfly_backward(x, exact_twiddles(n), None, 2 * (y - np.fft.fft(x)))
    np.testing.assert_allclose(grad_tw, 0.0, atol=1e-9)


def test_gate_heatmap_record():
    n = 8
    gates = np.linspace(0, 1, 12).reshape(3, 4)
    tw = exact_twiddles(n) * 2.0
    rec = gate_heatmap(gates, n, freq_mask=np.ones(16), twiddles=tw, model_id="m")
    assert isinstance(rec, FFTHeatmap)
    assert (rec.model_id, rec.stages, rec.butterflies) == ("m", 3, 4)
    assert rec.gates == pytest.approx(list(np.linspace(0, 1, 12)))
    assert rec.gates[1 * 4 + 2] == pytest.approx(gates[1, 2])  # row = stage
    assert rec.twiddle_mag == pytest.approx([2.0] * 12)
    assert rec.freq_mask == [1.0] * 16
    assert all(type(v) is float for v in rec.gates + rec.twiddle_mag)


def test_gate_heatmap_defaults_to_exact_twiddle_magnitudes():
    rec = gate_heatmap(np.full(6 * 32, 0.5), 64)
    assert rec.twiddle_mag == pytest.approx([1.0] * 192)
    assert rec.freq_mask is None and rec.model_id == ""


def test_gate_heatmap_rejects_bad_input():
    with pytest.raises(ValueError, match=r"stages\*butterflies = 12 values, given 10"):
        gate_heatmap(np.ones(10), 8)
    with pytest.raises(ValueError, match="gates: expected values in \\[0, 1\\], given 1.5"):
        gate_heatmap(np.r_[np.ones(11), 1.5], 8)
    with pytest.raises(ValueError, match="twiddles: expected shape"):
        gate_heatmap(np.ones(12), 8, twiddles=np.ones((3, 4)))
    with pytest.raises(ValueError, match="n_fft: expected a power of two"):
        gate_heatmap(np.ones(12), 12)


@settings(max_examples=30, deadline=None)
@given(powers.filter(lambda n: n <= 128), st.data())
def test_gate_heatmap_keeps_row_major_layout(n, data):
    stages, half = num_stages(n), n // 2
    gates = data.draw(arrays(np.float64, (stages, half), elements=st.floats(0, 1)))
    rec = gate_heatmap(gates, n)
    np.testing.assert_array_equal(np.reshape(rec.gates, (rec.stages, rec.butterflies)), gates)


def test_mel_filterbank_shape_and_peaks():
    fb = mel_filterbank(8, 64, 16000.0)
    assert fb.shape == (8, 33)
    assert fb.min() >= 0 and fb.max() <= 1
    peaks = fb.argmax(axis=1)
    assert np.all(np.diff(peaks) >= 0)  # centres rise with the filter index


def test_spectral_errors_zero_for_exact_and_known_values():
    fb = mel_filterbank(8, 64)
    x = np.random.default_rng(0).normal(size=(10, 64))
    ref = np.fft.fft(x)
    assert spectral_errors(ref, ref, fb) == {"spec_err": 0.0, "mel_err": 0.0, "welch_err": 0.0}
    # Doubling the spectrum: complex error 1, powers x4 so power errors 9.
    errs = spectral_errors(2 * ref, ref, fb)
    assert errs["spec_err"] == pytest.approx(1.0)
    assert errs["mel_err"] == pytest.approx(9.0)
    assert errs["welch_err"] == pytest.approx(9.0)


def test_spectral_errors_welch_ignores_phase_per_frame():
    fb = mel_filterbank(8, 64)
    ref = np.fft.fft(np.random.default_rng(2).normal(size=(6, 64)))
    errs = spectral_errors(ref * 1j, ref, fb)
    assert errs["spec_err"] == pytest.approx(2.0)
    assert errs["mel_err"] == pytest.approx(0.0, abs=1e-12)
    assert errs["welch_err"] == pytest.approx(0.0, abs=1e-12)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(0.1, 10.0))
def test_spectral_errors_scale_invariant(seed, scale):
    fb = mel_filterbank(8, 32)
    rng = np.random.default_rng(seed)
    ref = np.fft.fft(rng.normal(size=(4, 32)))
    noisy = ref + 0.1 * (rng.normal(size=ref.shape) + 1j * rng.normal(size=ref.shape))
    a, b = spectral_errors(noisy, ref, fb), spectral_errors(scale * noisy, scale * ref, fb)
    for key in a:
        assert b[key] == pytest.approx(a[key], rel=1e-9)
