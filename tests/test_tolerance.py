"""The tolerance separates fp32 from fp16 accumulation (numpy emulation of a tensor-core kernel)."""
import numpy as np
import pytest

from evo.evaluation.tolerance import error_stats, verdict


def gemm_fp32_acc(a, b):
    return (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)


def gemm_fp16_acc(a, b, k_step=16):
    """fp16 accumulation as mma.sync m16n8k16 with f16 accumulators does it: rounded every 16 k."""
    acc = np.zeros((a.shape[0], b.shape[1]), np.float16)
    for k in range(0, a.shape[1], k_step):
        part = a[:, k:k + k_step].astype(np.float32) @ b[k:k + k_step].astype(np.float32)
        acc = (acc.astype(np.float32) + part).astype(np.float16)
    return acc


@pytest.mark.parametrize("K", [64, 1024, 4096])
def test_fp32_accumulation_passes(K):
    rng = np.random.default_rng(K)
    a, b = rng.standard_normal((64, K)).astype(np.float16), rng.standard_normal((K, 64)).astype(np.float16)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    stats = error_stats(gemm_fp32_acc(a, b).astype(np.float32), ref)
    assert verdict(stats) is None and stats["rel_err"] < 3e-4


@pytest.mark.parametrize("K", [1024, 4096])
def test_fp16_accumulation_fails_on_large_k(K):
    rng = np.random.default_rng(K)
    a, b = rng.standard_normal((64, K)).astype(np.float16), rng.standard_normal((K, 64)).astype(np.float16)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    stats = error_stats(gemm_fp16_acc(a, b).astype(np.float32), ref)
    assert verdict(stats) and "accumulate in fp32" in verdict(stats)


def test_nan_and_a_few_wrong_elements_fail():
    rng = np.random.default_rng(0)
    ref = rng.standard_normal((128, 128)).astype(np.float32) * 30
    out = ref.astype(np.float16).astype(np.float32)
    assert verdict(error_stats(out, ref)) is None
    bad = out.copy()
    bad[5, 7] += 1.0  # one wrong element: invisible to the norm, caught elementwise
    assert error_stats(bad, ref)["rel_err"] < 5e-4
    assert "elements differ" in verdict(error_stats(bad, ref))
    nan = out.copy()
    nan[-1] = np.nan
    assert "NaN" in verdict(error_stats(nan, ref))


# (a, b) whose fp16 product is subnormal: rounded correctly, it is off by up to 2^-25 absolute, a
# relative error of up to 25% (these three failed the H200's 1x1x1 check of an honest simt kernel)
SUBNORMAL_PRODUCTS = [(-0.0171051025390625, 8.344650268554688e-06), (4.172325134277344e-06, 0.08062744140625),
                      (-8.344650268554688e-06, 0.25390625)]


@pytest.mark.parametrize("a, b", SUBNORMAL_PRODUCTS)
def test_an_output_rounded_to_an_fp16_subnormal_passes(a, b):
    ref = np.array([[np.float32(np.float16(a)) * np.float32(np.float16(b))]], np.float32)
    out = ref.astype(np.float16).astype(np.float32)
    assert out[0, 0] != ref[0, 0] and verdict(error_stats(out, ref)) is None
    assert verdict(error_stats(out + 2.0 ** -22, ref))  # four subnormal steps off is wrong
