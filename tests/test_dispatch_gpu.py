"""torch.ops.evo.matmul on the GPU (pytest -m gpu; needs torch with CUDA, nvcc and a Hopper GPU).

The export folder is made here from seed-family kernels (no search): a TMA persistent kernel, a
split-K one and a 2-block-cluster one, each over an M range. Its recorded speedups are set to 2.0
so that the dispatcher (checked=False) routes every covered M to the kernels: these tests check the
mechanics (eager, CUDA graphs, torch.compile, Linear, fallbacks), not speed.
"""
import json

import pytest

from evo.core.dispatch_table import build_tables
from evo.core.kernel import parse_declaration, waits_first_in_ptx
from evo.export import keeps_module_state
from evo.families import FAMILIES

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

HOPPER = FAMILIES["hopper"]
#: (params changed from the hopper default, N, K, the Ms its cells are at)
KERNELS = [({}, 1024, 1024, (16, 64, 200)), ({"SPLIT_K": 2, "PERSISTENT": 0}, 512, 4096, (8, 100)),
           ({"CLUSTER_M": 2}, 2048, 512, (128, 300))]


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory, compiler):
    folder = tmp_path_factory.mktemp("export")
    entries, cells = [], []
    sources = [HOPPER.render(dict(HOPPER.default, **change)) for change, *_ in KERNELS]
    for (_, n, k, ms), source, res in zip(KERNELS, sources, compiler.compile_many(sources)):
        assert res.ok, res.status
        pdl = compiler.pdl_dispatch(source, res)  # what evo export records (from the compile)
        assert pdl == waits_first_in_ptx(compiler.ptx(source))  # the PTX check itself agrees
        for m in ms:
            name = f"hgemm_{m}x{n}x{k}"
            (folder / f"{name}.cu").write_text(source)
            (folder / f"{name}.cubin").write_bytes(res.cubin)
            entries.append({"M": m, "N": n, "K": k, "file": f"{name}.cu", "cubin": f"{name}.cubin", "pdl": pdl,
                            "reentrant": not keeps_module_state(source)})  # as evo export records it
            cells.append({"M": m, "N": n, "K": k, "name": name, "decl": parse_declaration(source),
                          "recorded_speedup": 2.0})  # routed, not measured: see the module docstring
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    (folder / "manifest.json").write_text(json.dumps({"format": "evo-export/2", "num_sms": sms, "kernels": entries,
                                                      "tables": build_tables(cells, num_sms=sms)}))
    return folder


@pytest.fixture(scope="module")
def d(export_dir):
    import evo.dispatch
    disp = evo.dispatch.configure(export_dir, checked=False)
    assert disp.build() is not None, evo.dispatch.extension.why_not()
    return disp


def _captured(fn):
    """A CUDA graph of fn() (first run on a side stream, as capture needs) and the output it writes."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.no_grad():
        fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g), torch.no_grad():
        y = fn()
    return g, y


def _check(c, a, b):
    from evo.evaluation.tolerance import error_stats, verdict
    assert verdict(error_stats(c.float(), a.float() @ b.float())) is None


@pytest.mark.parametrize("change,n,k,ms", KERNELS)
def test_every_m_of_each_range_is_correct_on_fresh_data(d, change, n, k, ms):
    b = torch.randn(k, n, dtype=torch.float16, device="cuda")
    for m in range(1, ms[-1] + 2):
        a = torch.randn(m, k, dtype=torch.float16, device="cuda")
        path = d.explain(a, b)
        assert path.startswith("evo:") == (ms[0] <= m <= ms[-1]), path
        _check(torch.ops.evo.matmul(a, b, d.handle), a, b)


def test_out_variant_and_fallbacks_match_torch(d):
    a = torch.randn(77, 1024, dtype=torch.float16, device="cuda")
    w = torch.randn(1024, 1024, dtype=torch.float16, device="cuda")
    out = torch.empty(77, 1024, dtype=torch.float16, device="cuda")
    assert d.matmul(a, w, out=out) is out
    _check(out, a, w)
    assert "not contiguous" in d.explain(a, w.t())  # a transposed view goes to torch
    _check(d.matmul(a, w.t()), a, w.t())
    assert "float16" in d.explain(a.float(), w.float())
    torch.testing.assert_close(d.matmul(a.float(), w.float()), a.float() @ w.float())


def test_cuda_graph_capture_replays_on_new_data(d):
    a = torch.randn(50, 1024, dtype=torch.float16, device="cuda")
    b = torch.randn(1024, 1024, dtype=torch.float16, device="cuda")
    g, c = _captured(lambda: d.matmul(a, b))
    for _ in range(3):
        a.copy_(torch.randn_like(a))
        b.copy_(torch.randn_like(b))
        g.replay()
        torch.cuda.synchronize()
        _check(c, a, b)


def test_dependent_calls_without_syncs_read_complete_inputs(d):
    """Kernels are launched as programmatic dependents: a launch may be scheduled while the kernel
    before it on the stream still runs, and its first statement waits for that kernel. A chain of
    dependent calls (evo after evo, evo after a torch kernel) issued with no sync in between must
    read every input whole: each result is checked against its input afterwards. A smoke test: a
    kernel that read before waiting would fail it only when the race shows; what keeps such kernels
    from PDL is the export's check of their PTX (test_families.py)."""
    a = torch.randn(200, 1024, dtype=torch.float16, device="cuda")
    b = torch.randn(1024, 1024, dtype=torch.float16, device="cuda") / 32  # keeps values ~1 along the chain
    assert "programmatic dependent launch" in d.explain(a, b)
    steps = []
    for _ in range(12):
        y = d.matmul(a, b)  # evo after the torch kernel that wrote a
        z = d.matmul(y, b)  # evo after evo
        steps += [(a, y), (y, z)]
        a = z * 1.5 - 0.25  # a torch kernel after evo
    a2 = torch.randn(100, 4096, dtype=torch.float16, device="cuda")
    b2 = torch.randn(4096, 512, dtype=torch.float16, device="cuda") / 64
    for _ in range(12):  # the split-K kernel, whose partial sums meet in a workspace the next call reuses
        a2 = a2 * 0.5 + 0.5
        steps.append((a2, d.matmul(a2, b2)))
    torch.cuda.synchronize()
    for x, out in steps:
        _check(out, x, b if x.shape[1] == 1024 else b2)


def test_pdl_can_be_turned_off(export_dir):
    import evo.dispatch
    plain = evo.dispatch.Dispatcher(export_dir, checked=False, pdl=False)
    a = torch.randn(64, 1024, dtype=torch.float16, device="cuda")
    b = torch.randn(1024, 1024, dtype=torch.float16, device="cuda")
    assert plain.build() is not None
    assert plain.explain(a, b).startswith("evo:") and "programmatic" not in plain.explain(a, b)
    _check(plain.matmul(a, b), a, b)


def test_linear_under_torch_compile_has_no_graph_break(d):
    import evo.dispatch
    layer = torch.nn.Linear(1024, 1024).half().cuda()
    ref_layer = torch.nn.Linear(1024, 1024).half().cuda()
    ref_layer.load_state_dict(layer.state_dict())
    model = torch.nn.Sequential(layer, torch.nn.GELU())
    assert evo.dispatch.patch(model, d) == ["0"] and isinstance(model[0], evo.dispatch.Linear)
    x = torch.randn(3, 20, 1024, dtype=torch.float16, device="cuda")  # leading batch dims: M = 60
    with torch.no_grad():
        assert torch._dynamo.explain(model)(x).graph_break_count == 0
        compiled = torch.compile(model, fullgraph=True)
        for _ in range(2):
            x = torch.randn(3, 20, 1024, dtype=torch.float16, device="cuda")
            torch.testing.assert_close(compiled(x), torch.nn.functional.gelu(ref_layer(x)), atol=2e-2, rtol=2e-2)
            torch.testing.assert_close(model(x), torch.nn.functional.gelu(ref_layer(x)), atol=2e-2, rtol=2e-2)


def test_linear_falls_back_under_autograd(d):
    import evo.dispatch
    layer = evo.dispatch.Linear(torch.randn(1024, 1024, dtype=torch.float16, device="cuda"), dispatcher=d)
    x = torch.randn(8, 1024, dtype=torch.float16, device="cuda", requires_grad=True)
    layer(x).sum().backward()
    assert x.grad is not None and x.grad.shape == x.shape


def test_verify_re_checks_every_range_on_this_gpu(export_dir, tmp_path):
    import shutil

    from evo.core.dispatch_table import torch_points
    from evo.dispatch import Dispatcher
    from evo.dispatch.verify import verify
    folder = tmp_path / "copy"
    shutil.copytree(export_dir, folder)
    manifest = verify(folder, replays=5)
    gpu = torch.cuda.get_device_name()
    assert manifest["verified"]["gpu"] == gpu
    for table in manifest["tables"]:
        for rng in table["ranges"]:
            check = rng["check"]
            assert check["correct"] and check["max_rel_err"] < 5e-4 and check["gpu"] == gpu
            assert [p["M"] for p in check["points"]] == sorted({rng["m_lo"], (rng["m_lo"] + rng["m_hi"]) // 2,
                                                                 rng["m_hi"]})
            assert rng["use"] == all(p["faster"] for p in check["points"])
        layout = table["torch_layout"]  # the torch path's two weight layouts, at the Ms torch serves
        assert layout["gpu"] == gpu and [p["M"] for p in layout["points"]] == torch_points(table)
        assert layout["slower_at"] == [p["M"] for p in layout["points"] if p["slower"]]
        assert all(len(p["kn_ms"]) == len(p["nk_ms"]) == 5 and p["ratio"] > 0 for p in layout["points"])
    d = Dispatcher(folder)  # checked: uses exactly the ranges the re-check kept
    for table in manifest["tables"]:
        for rng in table["ranges"]:
            seg, why = d.route(rng["m_hi"], table["N"], table["K"], gpu=gpu)
            assert (seg is not None) == rng["use"], why


def _hgemm_launched(fn) -> bool:
    """Whether calling fn ran an exported kernel (every exported cubin's entry point is `hgemm`)."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return any(e.name == "hgemm" for e in prof.events())


@pytest.mark.parametrize("bias", [False, True])
def test_linear_op_is_one_call_for_batch_dims_and_bias_on_both_paths(d, bias):
    import evo.dispatch
    layer = torch.nn.Linear(1024, 1024, bias=bias).half().cuda()
    fast = evo.dispatch.Linear.from_linear(layer, d)
    ext = evo.dispatch.extension.load()
    with torch.no_grad():
        for lead in [(3, 20), (60,), (2, 3, 10), (5,), (1, 300)]:  # M = 60 and 60 (kernel), 5 and 300 (torch)
            x = torch.randn(*lead, 1024, dtype=torch.float16, device="cuda")
            m = x.numel() // 1024
            kernel = d.explain(x.view(m, 1024), fast.weight_t).startswith("evo:")
            assert kernel == (16 <= m <= 200)
            ref = layer(x)
            for got in (fast(x), ext.linear(x, fast.weight_t, fast.bias, d.handle),
                        torch.ops.evo.linear(x, fast.weight_t, fast.bias, d.handle)):
                assert got.shape == ref.shape and got.dtype == ref.dtype
                torch.testing.assert_close(got, ref, atol=2e-2, rtol=2e-2)
            assert _hgemm_launched(lambda x=x: fast(x)) == kernel


def test_linear_in_a_cuda_graph_replays_on_new_data(d):
    import evo.dispatch
    layer = torch.nn.Linear(1024, 1024).half().cuda()
    fast = evo.dispatch.Linear.from_linear(layer, d)
    x = torch.randn(2, 25, 1024, dtype=torch.float16, device="cuda")  # M = 50: the kernel
    g, y = _captured(lambda: fast(x))
    for _ in range(3):
        x.copy_(torch.randn_like(x))
        g.replay()
        torch.cuda.synchronize()
        with torch.no_grad():
            torch.testing.assert_close(y, layer(x), atol=2e-2, rtol=2e-2)


def test_tensor_maps_follow_new_buffers_and_a_new_m_at_the_same_address(d):
    b = torch.randn(1024, 1024, dtype=torch.float16, device="cuda")
    big = torch.randn(200, 1024, dtype=torch.float16, device="cuda")
    others = [torch.randn(64, 1024, dtype=torch.float16, device="cuda") for _ in range(2)]
    # one segment, the same A address with different M (a prefix of one buffer), then other buffers
    for a in [big[:64], big[:40], big[:64], others[0], others[1], others[0], big[:64]]:
        _check(d.matmul(a, b), a, b)
    out = torch.empty(64, 1024, dtype=torch.float16, device="cuda")
    for a in [others[0], others[1]]:  # the same C address, new A
        d.matmul(a, b, out=out)
        _check(out, a, b)


def test_an_input_that_needs_a_gradient_gets_one_through_the_eager_entry_points(d):
    a = torch.randn(64, 1024, dtype=torch.float16, device="cuda", requires_grad=True)
    b = torch.randn(1024, 1024, dtype=torch.float16, device="cuda")
    c = d.matmul(a, b)  # M = 64 is in a range: the kernel would have no backward, torch runs
    assert c.requires_grad
    c.float().sum().backward()
    torch.testing.assert_close(a.grad, b.sum(1).expand(64, -1).to(a.grad.dtype), atol=0.5, rtol=2e-2)


def _kept_pair(d, bias):
    """nn.Linear and an evo.dispatch.Linear of it that keeps W [N, K] for its torch path."""
    import evo.dispatch
    plain = torch.nn.Linear(1024, 1024, bias=bias).half().cuda()
    fast = evo.dispatch.Linear.from_linear(plain, d, fallback_weight="keep")
    assert fast.weight is not None and fast.extra_bytes == 1024 * 1024 * 2
    return plain, fast


@pytest.mark.parametrize("bias", [False, True])
def test_a_kept_weight_makes_the_torch_path_nn_linears_own_bit_for_bit(d, bias):
    plain, fast = _kept_pair(d, bias)
    with torch.no_grad():
        for lead in [(300,), (1, 300), (5,), (2, 3, 50), (2, 25)]:  # M = 300 (also in 3 and 4 dims), 5: torch; 50: kernel
            x = torch.randn(*lead, 1024, dtype=torch.float16, device="cuda")
            torch_path = d.explain(x.view(-1, 1024), fast.weight_t).startswith("torch:")
            if torch_path:
                assert torch.equal(fast(x), plain(x)) and not _hgemm_launched(lambda x=x: fast(x))
            else:  # a kernel runs: W.T as before, the kept W is not touched
                torch.testing.assert_close(fast(x), plain(x), atol=2e-2, rtol=2e-2)
                assert _hgemm_launched(lambda x=x: fast(x))
    x = torch.randn(300, 1024, dtype=torch.float16, device="cuda", requires_grad=True)
    fast(x).float().sum().backward()  # the gradient goes through torch on the kept W
    assert x.grad is not None and x.grad.shape == x.shape


def test_a_kept_weight_is_nn_linears_own_in_a_cuda_graph_and_compiled(d):
    plain, fast = _kept_pair(d, True)
    x = torch.randn(1, 300, 1024, dtype=torch.float16, device="cuda")  # M = 300: above every range, torch
    g, y = _captured(lambda: fast(x))
    with torch.no_grad():
        compiled = torch.compile(fast, fullgraph=True)
        for _ in range(2):
            x.copy_(torch.randn_like(x))
            g.replay()
            torch.cuda.synchronize()
            ref = plain(x)
            assert torch.equal(y, ref) and torch.equal(compiled(x), ref)
        assert torch._dynamo.explain(fast)(x).graph_break_count == 0


class _Fake:
    """A dispatcher stand-in for verify's correctness check: torch's product, and one way of cheating."""

    def __init__(self, cheat: str):
        self.cheat = cheat

    def matmul(self, a, b, out=None):
        if self.cheat == "rewrites_b":  # keeps only B's first row: an O(MN) product the old check passed
            b[1:].zero_()
            c = torch.outer(a[:, 0].float(), b[0].float()).half()
        else:
            c = torch.matmul(a, b)
        if out is None:
            return c
        out.copy_(c)
        if self.cheat == "writes_past_c":  # one element past the end, as an unmasked partial tile
            torch.as_strided(out, (out.numel() + 1,), (1,))[-1] = 0
        return out


@pytest.mark.parametrize("cheat, error", [("", None), ("rewrites_b", "modified its inputs"),
                                          ("writes_past_c", "wrote outside its buffers (guard zone of C")])
def test_verify_correctness_catches_rewritten_inputs_and_writes_past_the_output(cheat, error):
    from evo.dispatch.verify import _correct
    ok, _, why = _correct(_Fake(cheat), 256, 512, [1, 17, 100])
    assert ok == (error is None) and (why is None if error is None else error in why), why


def test_a_compiled_matmul_gives_gradients(d):
    # the compile substitute of matmul had no autograd branch (Linear's had): a.grad came back None
    f = torch.compile(lambda a, b: d.matmul(a, b), fullgraph=True)
    a = torch.randn(64, 1024, dtype=torch.float16, device="cuda", requires_grad=True)
    b = torch.randn(1024, 1024, dtype=torch.float16, device="cuda")
    f(a, b).float().sum().backward()
    torch.testing.assert_close(a.grad, b.sum(1).expand(64, -1).to(a.grad.dtype), atol=0.5, rtol=2e-2)


def test_a_split_k_kernel_on_two_streams_at_once_stays_correct(d):
    # its workspace is a module global: eager launches on two streams are serialised (docs/export.md)
    n, k, m = 512, 4096, 100
    b = torch.randn(k, n, dtype=torch.float16, device="cuda")
    streams = [torch.cuda.Stream() for _ in range(2)]
    for s in streams:
        s.wait_stream(torch.cuda.current_stream())
    outs = []
    with torch.no_grad():
        for _ in range(20):
            for s in streams:
                with torch.cuda.stream(s):
                    a = torch.randn(m, k, dtype=torch.float16, device="cuda")
                    outs.append((a, d.matmul(a, b)))
    torch.cuda.synchronize()
    for a, c in outs:
        _check(c, a, b)


def test_under_autocast_to_bf16_torch_runs_and_returns_bf16(d):
    a = torch.randn(64, 1024, dtype=torch.float16, device="cuda")
    b = torch.randn(1024, 1024, dtype=torch.float16, device="cuda")
    with torch.autocast("cuda", dtype=torch.bfloat16), torch.no_grad():
        assert d.matmul(a, b).dtype == torch.bfloat16
        assert d.explain(a, b).startswith("torch: torch.autocast to bfloat16")
    assert d.explain(a, b).startswith("evo:")


@pytest.mark.parametrize("m,n,k", [(100, 512, 4096), (16, 1024, 1024)], ids=["split-K", "reentrant"])
def test_a_fresh_thread_whose_first_cuda_work_is_an_evo_call(d, m, n, k):
    """The kernels are loaded already (on this thread): on the new one no CUDA context is current until
    evo makes it so (a CUDAGuard on the runtime's current device sets nothing). The split-K kernel also
    asks whether the stream captures, to serialise its launches; the reentrant one launches directly."""
    import threading
    a = torch.randn(m, k, dtype=torch.float16, device="cuda")
    b = torch.randn(k, n, dtype=torch.float16, device="cuda")
    assert d.explain(a, b).startswith("evo:")
    torch.cuda.synchronize()
    out: dict = {}

    def call():
        try:
            out["c"] = d.matmul(a, b)
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 -- reported below
            out["error"] = f"{type(e).__name__}: {e}"
    thread = threading.Thread(target=call)
    thread.start()
    thread.join()
    assert "error" not in out, out["error"]
    _check(out["c"], a, b)
