"""The projection check of timed outputs (gpu_buffers.projection_verdicts: fp16 operands, fp32 sums)
against the fp32 check it replaced (old_projection below, kept as the reference).

On CPU torch has no fp16 matmul with an fp32 result, so there the same algebra (the split of B x, the
expanded sigma, the chunks of C) runs on fp32 copies; the GPU tests (pytest -m gpu -k projection -s)
run the fp16 matmuls and print old against new timings."""
import time
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from evo.evaluation.gpu_buffers import (  # noqa: E402
    PROJECTION_BYTES,
    PROJECTION_SIGMAS,
    TimingSets,
    _split16,
    projection_sets,
    projection_terms,
    projection_verdicts,
    projection_wants,
)
from evo.evaluation.tolerance import ELEM_ATOL_RMS, ELEM_RTOL  # noqa: E402


def _terms(A, B, C, x):
    """The check's terms with A (B x) taken from the same inputs (as before the launches)."""
    return projection_terms(C, x, projection_wants(A, B, list(range(A.shape[0])), x))


def _verdicts(A, B, C, x):
    return projection_verdicts(C, x, projection_wants(A, B, list(range(A.shape[0])), x))


def _sets(A, B, C, chosen, x):
    return projection_sets(C, chosen, x, projection_wants(A, B, chosen, x))


def old_terms(A, B, C, x):
    """The fp32 check before (TimingSets.queue_projection up to 3e789c5) with a given x, per row:
    (|C x - A (B x)|, sigma, bad), all sets x M."""
    x = x.float().view(-1, 1)
    xx = x * x
    c = C.float()
    got = c @ x
    want = A.float() @ (B.float() @ x)
    rms = (c * c).mean(dim=(1, 2), keepdim=True).sqrt()
    allowed = c.abs().mul_(ELEM_RTOL).add_(ELEM_ATOL_RMS * rms)
    sigma = (allowed.mul_(allowed) @ xx).sqrt()
    del allowed
    dev = (got - want).abs()
    bad = ~(dev <= PROJECTION_SIGMAS * sigma)
    bad |= ~torch.isfinite(c).all(dim=2, keepdim=True)
    return dev.squeeze(2), sigma.squeeze(2), bad.squeeze(2)


def old_projection(A, B, C, x):
    """The old check's verdicts over all sets, grouped as it grouped them: (rows beyond the tolerance,
    any NaN), one per set."""
    n, M, K = A.shape
    N = B.shape[2]
    group = max(1, PROJECTION_BYTES // (4 * (2 * M * N + M * K + K * N)))
    rows = torch.empty(n, dtype=torch.int32, device=C.device)
    nans = torch.empty(n, dtype=torch.bool, device=C.device)
    for lo in range(0, n, group):
        hi = min(n, lo + group)
        rows[lo:hi] = old_terms(A[lo:hi], B[lo:hi], C[lo:hi], x)[2].sum(dim=1)
        nans[lo:hi] = torch.isnan(C[lo:hi]).flatten(1).any(dim=1)
    return rows, nans


def problem(sets, M, N, K, *, device="cpu", scale_a=1.0, scale_b=1.0, seed=0):
    """fp16 inputs, the exact output (fp32 reference rounded to fp16) and an fp16 projection vector."""
    g = torch.Generator(device=device).manual_seed(seed)
    A = (torch.randn(sets, M, K, generator=g, device=device) * scale_a).clamp_(-65000, 65000).half()
    B = (torch.randn(sets, K, N, generator=g, device=device) * scale_b).clamp_(-65000, 65000).half()
    C = torch.bmm(A.float(), B.float()).clamp_(-65000, 65000).half()
    x = torch.randn(N, generator=g, device=device).half()
    return A, B, C, x


def corrupt(C, kind, x):
    """C (sets x M x N) with set 1 made wrong (sets 0 and 2 too for non-finite outputs) in one of the ways
    a kernel can be."""
    C = C.clone()
    if kind == "element":  # one element far off, where x weighs it most (a projection sees it best there)
        j = int(x.float().abs().argmax())
        c = C[1, -1, j].float()
        rms = C[1].float().square().mean().sqrt()
        C[1, -1, j] = (c - torch.sign(c + 0.5) * 8 * rms).clamp(-65000, 65000).half()
    elif kind == "element_1e-2":  # one element 1% off: within what a projection can see, as before
        C[1, 0, 0] *= 1.01
    elif kind == "row":
        C[1, C.shape[1] // 2] = 0
    elif kind == "nan_inf":
        C[1, 0, -1] = float("nan")
        C[2, -1, 0] = float("inf")
        C[0, 0, 0] = float("-inf")
    elif kind == "stale":  # a kernel that leaves another set's output in place
        C[1] = C[0]
    elif kind == "noise":  # one fp16 ulp either way in every element: within the tolerance
        up = torch.nextafter(C, torch.full_like(C, float("inf")))
        down = torch.nextafter(C, torch.full_like(C, float("-inf")))
        C = torch.where(torch.rand(C.shape, device=C.device) < 0.5, up, down)
    return C


KINDS = ["exact", "noise", "element", "element_1e-2", "row", "nan_inf", "stale"]


def assert_same_verdicts(A, B, C, x):
    """Per-set verdicts of the new check equal the old one's; per-row terms within fp32 rounding."""
    rows, nans = _sets(A, B, C, list(range(A.shape[0])), x)
    old_rows, old_nans = old_projection(A, B, C, x)
    assert rows.tolist() == old_rows.tolist() and nans.tolist() == old_nans.tolist()
    dev, sigma, _ = _terms(A, B, C, x)
    old_dev, old_sigma, _ = old_terms(A, B, C, x)
    ok = torch.isfinite(old_dev) & torch.isfinite(old_sigma) & (old_sigma > 0)
    # both are fp32 roundings of the same sums (|A (B x)| is ~sqrt(K) / 2e-3 sigma): the projections
    # differ by up to ~1e-2 sigma at K = 7168 (each is that far from the exact value), sigma by ~1e-6
    assert ((dev - old_dev).abs() <= 5e-2 * old_sigma)[ok].all()
    assert ((sigma - old_sigma).abs() <= 1e-3 * old_sigma)[ok].all()
    return rows.tolist(), nans.tolist()


CASES = [  # sets, M, N, K, scale of A, scale of B
    (3, 512, 512, 512, 1.0, 1.0),
    (3, 1, 8, 8, 1.0, 1.0),
    (3, 64, 1024, 512, 24.0, 24.0),  # outputs up to ~60000
    (3, 32, 2304, 1024, 1e-3, 2e4),  # B x up to ~4e6, far beyond fp16: the split scales it
    (3, 16, 4096, 64, 1e-2, 3e4),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c)))
def test_projection_flags_what_the_fp32_check_flags(case):
    sets, M, N, K, sa, sb = case
    A, B, C, x = problem(sets, M, N, K, scale_a=sa, scale_b=sb)
    assert 0 < C.float().abs().max() < 65504
    for kind in KINDS:
        rows, nans = assert_same_verdicts(A, B, corrupt(C, kind, x) if kind != "exact" else C, x)
        if kind in ("exact", "noise"):
            assert rows == [0] * sets and not any(nans), kind
        elif kind in ("element", "row", "stale"):
            assert rows[1] >= 1 and rows[0] == rows[2] == 0, kind


def test_projection_matches_on_a_large_odd_shape():
    A, B, C, x = problem(2, 257, 2304, 4096)
    assert assert_same_verdicts(A, B, C, x) == ([0, 0], [False, False])
    assert assert_same_verdicts(A, B, corrupt(C, "stale", x), x)[0][1] > 200


@pytest.mark.parametrize("case", CASES[:4] + [(2, 257, 2304, 4096, 1.0, 1.0)], ids=lambda c: "x".join(map(str, c)))
def test_projection_is_as_close_to_exact_as_the_fp32_check(case):
    """|C x - A (B x)| against float64: the fp16 split of B x costs no more than fp32's own rounding."""
    sets, M, N, K, sa, sb = case
    A, B, C, x = problem(sets, M, N, K, scale_a=sa, scale_b=sb, seed=3)
    xd = x.double().view(-1, 1)
    exact = ((C.double() @ xd) - A.double() @ (B.double() @ xd)).abs().squeeze(2)
    dev, sigma, _ = _terms(A, B, C, x)
    old_dev = old_terms(A, B, C, x)[0]
    new_err, old_err = ((dev - exact).abs() / sigma).max(), ((old_dev - exact).abs() / sigma).max()
    assert new_err <= max(2 * old_err, 1e-3) and new_err < 1e-2


@pytest.mark.parametrize("chunk,budget", [(1000, 1 << 28), (3 * 1024 + 5, 1), (1, 5200)])  # groups: all 5 sets; 1 set; 2 sets
def test_projection_in_small_chunks_and_groups(monkeypatch, chunk, budget):
    """Slices of C smaller than a row or not a whole number of rows, groups of one set or of a few."""
    import evo.evaluation.gpu_buffers as gb
    monkeypatch.setattr(gb, "PROJECTION_CHUNK", chunk)
    monkeypatch.setattr(gb, "PROJECTION_BYTES", budget)
    A, B, C, x = problem(5, 7, 1024, 96)
    for kind in KINDS:
        assert_same_verdicts(A, B, corrupt(C, kind, x) if kind != "exact" else C, x)


def test_projection_sees_a_wrong_element_as_far_as_a_projection_can():
    """512^3: the projection sees an element off by ~3% (its row's x_j and |c| large); 1% needs the
    elementwise check (check_elementwise), before as now: a row's sigma sums N elements' tolerance."""
    A, B, C, x = problem(1, 512, 512, 512, seed=1)
    j = int(x.float().abs().argmax())
    i = int(C[0, :, j].float().abs().argmax())
    for rel, flagged in ((0.25, True), (1e-2, False)):
        wrong = C.clone()
        wrong[0, i, j] = (C[0, i, j].float() * (1 + rel)).half()
        rows, nans = _verdicts(A, B, wrong, x)
        assert rows.tolist() == [int(flagged)] and nans.tolist() == [False]
        assert assert_same_verdicts(A, B, wrong, x)[0] == [int(flagged)]


def test_projection_counts_nan_and_inf():
    A, B, C, x = problem(3, 16, 64, 32)
    rows, nans = _verdicts(A, B, corrupt(C, "nan_inf", x), x)
    # a NaN makes its set's rms NaN, so every row fails; an Inf fails its own row only
    assert rows.tolist() == [1, 16, 1] and nans.tolist() == [False, True, False]


def test_split_holds_fp32_vectors_in_two_fp16_parts():
    g = torch.Generator().manual_seed(2)
    y = torch.randn(6, 4096, generator=g) * torch.logspace(-30, 30, 4096).view(1, -1)  # 60 decades in a set
    y[1] *= 1e-8
    y[2] = 0
    y[3, :100] = 0
    y[4] = torch.randn(4096, generator=g) * 3e6
    parts, p = _split16(y)
    assert parts.dtype == torch.float16 and torch.isfinite(parts).all()
    back = torch.ldexp(parts.float().sum(dim=2), -p)
    biggest = y.abs().amax(dim=1, keepdim=True)
    assert ((back - y).abs() <= 2.0 ** -22 * y.abs() + 2.0 ** -38 * biggest).all()
    y[5, 7] = float("inf")
    y[5, 9] = float("nan")
    parts, _ = _split16(y)
    assert not torch.isfinite(parts[5, 7]).all() and not torch.isfinite(parts[5, 9]).all()
    assert torch.isfinite(parts[5, 10:]).all()


# ---- on the GPU: the fp16 matmuls themselves, and the timing the lead reads in the log ----

@pytest.fixture
def cuda_fp32():
    """TF32 off, as in the worker: the old check's fp32 matmuls round as fp32."""
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32 = old


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(1, 4096, 4096), (257, 2048, 7168), (1024, 1024, 1024), (64, 8, 8)],
                         ids=lambda s: "x".join(map(str, s)))
def test_projection_gpu_flags_what_the_fp32_check_flags(cuda_fp32, shape):
    M, N, K = shape
    A, B, C, x = problem(4, M, N, K, device="cuda")
    for kind in KINDS:
        rows, nans = assert_same_verdicts(A, B, corrupt(C, kind, x) if kind != "exact" else C, x)
        print(f"projection {M}x{N}x{K} {kind}: rows {rows} nans {nans}")
        if kind in ("exact", "noise"):
            assert rows == [0] * 4 and not any(nans), kind
        elif kind in ("element", "row", "stale"):
            assert rows[1] >= 1 and rows[0] == rows[2] == rows[3] == 0, kind
        elif kind == "nan_inf":
            assert rows == [1, M, 1, 0] and nans == [False, True, False, False]


@pytest.mark.gpu
def test_projection_gpu_through_timing_sets(cuda_fp32):
    harness = SimpleNamespace(info=SimpleNamespace(l2_bytes=50 << 20), stream=torch.cuda.Stream(), clock=None)
    sets = TimingSets(harness, 96, 1024, 512, ["rotating"])
    assert sets.n > 1
    assert "NaN outputs" in sets.check_outputs()  # poisoned, as before a launch
    with torch.cuda.stream(harness.stream):
        for lo in range(0, sets.n, 256):
            sets.C[lo:lo + 256] = torch.bmm(sets.A[sets.a_of[lo:lo + 256]].float(), sets.B[lo:lo + 256].float()).half()
    assert sets.check_outputs(full=True) is None
    with torch.cuda.stream(harness.stream):
        sets.C[sets.n - 1] = sets.C[0]
    error = sets.check_outputs()
    assert error and f"buffer set {sets.n - 1}:" in error and "NaN" not in error
    assert sets.check_outputs(indices=list(range(sets.n - 1))) is None


def _ms_per_check(check, reps=10):
    check()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        check()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / reps


@pytest.mark.gpu
@pytest.mark.parametrize("sets,shape", [(64, (1, 4096, 4096)), (8, (1024, 1024, 1024)), (4, (257, 2048, 7168))],
                         ids=["64x1x4096x4096", "8x1024x1024x1024", "4x257x2048x7168"])
def test_projection_gpu_timing(cuda_fp32, sets, shape):
    M, N, K = shape
    A, B, C, x = problem(sets, M, N, K, device="cuda")
    chosen = list(range(sets))
    old_ms = _ms_per_check(lambda: old_projection(A, B, C, x))
    new_ms = _ms_per_check(lambda: _sets(A, B, C, chosen, x))
    torch.cuda.synchronize()
    t = time.perf_counter()
    _sets(A, B, C, chosen, x)
    host_ms = (time.perf_counter() - t) * 1e3
    print(f"\nprojection check, {sets} sets of {M}x{N}x{K}: fp32 (old) {old_ms:.3f} ms, fp16 (new) {new_ms:.3f} ms "
          f"({old_ms / new_ms:.2f}x); host time to queue the new one {host_ms:.3f} ms")
    assert _sets(A, B, C, chosen, x)[0].tolist() == [0] * sets
