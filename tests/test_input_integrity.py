"""A kernel that rewrites its inputs while it is timed is compared with the product of the inputs it
was given (gpu_buffers.TimingSets: A (B x) is taken at the refresh, before any launch, and x erased
until the check draws it again). Runs wherever torch does, on the CPU (the sets on "cpu", no stream,
no graphs); the GPU tests run the same through CUDA graphs (evo selftest's bad_rewrites_inputs.cu)."""
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from evo.evaluation import gpu_buffers  # noqa: E402
from evo.evaluation.gpu_buffers import TimingSets  # noqa: E402


@pytest.fixture
def sets(monkeypatch):
    monkeypatch.setattr(gpu_buffers, "TIMING_BYTES", 1 << 20)  # a few sets, not 1 GiB of them
    harness = SimpleNamespace(info=SimpleNamespace(l2_bytes=1 << 18), stream=None, clock=None, device="cpu")
    s = TimingSets(harness, 24, 40, 72, ["rotating"])
    assert s.n > 4
    return s


def honest(s, i=None):
    pick = slice(None) if i is None else slice(i, i + 1)
    s.C[pick] = torch.bmm(s.A[s.a_of][pick].float(), s.B[pick].float()).half()  # set i is A[a_of[i]], B[i], C[i]


def rewrite_inputs(s, i=None):
    """What bad_rewrites_inputs.cu does: B below its first row zeroed, C the outer product of A's first
    column and B's first row, which is then the exact product of the changed inputs."""
    pick = slice(None) if i is None else slice(i, i + 1)
    s.B[pick, 1:, :] = 0
    s.C[pick] = (s.A[s.a_of][pick, :, :1].float() * s.B[pick, :1, :].float()).half()


def test_honest_outputs_pass_and_x_is_in_memory_only_during_a_check(sets):
    assert not sets._x.any()  # nothing of x is in memory while the launches run
    honest(sets)
    assert sets.check_outputs(full=True) is None
    assert not sets._x.any()  # nor after the check, when the next launches run
    sets.refresh()
    honest(sets)
    assert sets.check_outputs(full=True) is None


def test_a_kernel_that_rewrites_its_inputs_fails_both_checks(sets):
    rewrite_inputs(sets)
    error = sets.check_outputs()
    assert error and "buffer set 0:" in error and "inputs as written" in error
    assert "wrong output" in sets.check_elementwise()  # against the inputs kept aside at the refresh


def test_outputs_all_zero_fail_even_against_a_zeroed_reference(sets):
    """A kernel that found the reference in device memory could zero it with C and A: sigma is then 0
    and so is every deviation."""
    sets.C.zero_()
    sets.A.zero_()
    sets._ref.want.zero_()
    assert "buffer set 0:" in sets.check_outputs()


def test_hot_mode_after_server_mode_has_its_reference(sets):
    """Server mode leaves the reference of one set; hot mode refreshes set 0 before its launches (as
    gpu_timing.time_hot does) and checks it."""
    sets.refresh(7)
    sets.refresh(0)
    honest(sets, 0)
    assert sets.check_outputs(full=True, indices=[0]) is None


def test_one_rewritten_set_among_honest_ones_is_found(sets):
    honest(sets)
    rewrite_inputs(sets, sets.n - 2)
    error = sets.check_outputs()
    assert error and f"buffer set {sets.n - 2}:" in error


def test_a_single_set_refresh_checks_that_set(sets):
    """Server mode: refresh one set, launch once, check that set."""
    sets.refresh(3)
    honest(sets, 3)
    assert sets.check_outputs(indices=[3]) is None
    sets.refresh(3)
    rewrite_inputs(sets, 3)
    assert "buffer set 3:" in sets.check_outputs(indices=[3])
    with pytest.raises(RuntimeError, match="not refreshed with a reference"):
        sets.check_outputs(indices=[4])
    with pytest.raises(RuntimeError, match="elementwise"):
        sets.check_elementwise([4])


def test_every_refresh_builds_the_checks_reference(monkeypatch):
    """The libraries' sets too: their checks run between chunks (verdicts unread) so that the GPU works
    as it does for a kernel, and a check needs the reference of the inputs just written."""
    monkeypatch.setattr(gpu_buffers, "TIMING_BYTES", 1 << 20)
    harness = SimpleNamespace(info=SimpleNamespace(l2_bytes=1 << 18), stream=None, clock=None, device="cpu")
    s = TimingSets(harness, 24, 40, 72, ["rotating"])
    first = s._ref
    s.refresh(2)
    assert s._ref is not first and s._ref.chosen == [2] and s._full[0] == 2
    s.C[2] = float("nan")  # a library writing elsewhere leaves the poisoned output: a failing verdict, unread
    assert "NaN" in s.check_outputs(indices=[2])


def test_honest_subnormal_and_zero_outputs_of_1x1x1_pass(monkeypatch):
    """On the H200 an honest simt kernel failed 1x1x1 (8192 sets of one element): outputs rounded to
    fp16 subnormals are off by more than any relative bound allows, and with K = 1 an input element
    that is fp16 zero makes an honest output exactly zero."""
    monkeypatch.setattr(gpu_buffers, "TIMING_BYTES", 1 << 20)
    harness = SimpleNamespace(info=SimpleNamespace(l2_bytes=1 << 18), stream=None, clock=None, device="cpu")
    s = TimingSets(harness, 1, 1, 1, ["rotating"])
    subnormal_products = [(-0.0171051025390625, 8.344650268554688e-06), (4.172325134277344e-06, 0.08062744140625),
                          (-8.344650268554688e-06, 0.25390625)]  # three that failed on the H200
    for i, (a, b) in enumerate(subnormal_products + [(0.0, 1.5)]):
        s.A[s.a_of[i]], s.B[i] = a, b
    s._ref = s._reference(list(range(s.n)))  # as if the refresh had drawn them
    s._full = (0, s.a(0).clone(), s.B[0].clone())
    honest(s)
    assert s.check_outputs(full=True) is None
    s.C[1] = s.C[1] * 4  # but a wrong subnormal is still wrong
    assert "buffer set 1:" in s.check_outputs()


def look_ahead(s, width=4):
    """The red-team kernel (evo selftest's bad_look_ahead.cu) on the CPU: launches in order;
    a launch whose output is already written returns at once, any other computes its own set and the
    next width-1 sets' outputs, finding their inputs by pointer arithmetic (A, B and C of set j at j
    times a set's size from the first)."""
    for i in range(s.n):
        if not torch.isnan(s.C[i]).any():
            continue
        s.C[i] = (s.a(i).float() @ s.B[i].float()).half()
        for j in range(i + 1, min(i + width, s.n)):
            s.C[j] = (s.A[j].float() @ s.B[j].float()).half()


def test_a_launch_cannot_compute_the_next_sets_outputs_from_its_pointers(sets):
    assert sorted(sets.a_of) == list(range(sets.n)) and sets.a_of != list(range(sets.n))
    look_ahead(sets)
    assert "wrong output" in sets.check_outputs()
    # with A in index order (as before session 23) the same kernel passed every check
    sets.a_of = list(range(sets.n))
    sets._a_index = torch.arange(sets.n)
    sets.refresh()
    look_ahead(sets)
    assert sets.check_outputs(full=True) is None


def test_each_evaluation_draws_its_own_order_of_a(sets):
    harness = SimpleNamespace(info=SimpleNamespace(l2_bytes=1 << 18), stream=None, clock=None, device="cpu")
    orders = {tuple(TimingSets(harness, 24, 40, 72, ["rotating"]).a_of) for _ in range(5)}
    assert len(orders) > 1
