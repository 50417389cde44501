"""Dispatch over M ranges without a GPU: shape ranges, the dispatch table, the never-slower rule,
the export's tables and the routing/explain logic of evo.dispatch (torch's part is in
tests/test_dispatch_gpu.py)."""
import json
import statistics
import subprocess
import sys

import pytest

from evo.cli.hydra_app import compose
from evo.core.dispatch_table import (
    LAYOUT_POINTS,
    NOISE,
    apply_check,
    apply_layout_check,
    build_tables,
    check_points,
    faster_beyond_noise,
    find,
    layout_verdict,
    segments,
    timing_points,
    torch_points,
)
from evo.core.errors import EvoError, ShapeError
from evo.core.kernel import parse_declaration
from evo.core.shapes import Shape, build_shape_set, parse_shapes, range_points
from evo.dispatch import Dispatcher, extension
from evo.dispatch.dispatcher import fallback_choice, launch_values, tensor_problem

DECL = """
// @evo grid     = cdiv(N, 128), cdiv(M, 64), 1
// @evo block    = 256
// @evo smem     = 1024
// @evo requires = M % 5 != 0
// @evo tma      = A box(64, min(M, 64)) swizzle(128)
"""


def test_a_range_is_searched_at_its_edges_and_the_powers_of_two_between():
    assert range_points(1, 64) == [1, 2, 4, 8, 16, 32, 64]
    assert range_points(3, 100) == [3, 4, 8, 16, 32, 64, 100]
    assert range_points(7, 7) == [7]
    assert parse_shapes("33-64x4096x1024") == [Shape(33, 4096, 1024), Shape(64, 4096, 1024)]
    assert parse_shapes("77x4096x4096") == [Shape(77, 4096, 4096)]
    shapes = build_shape_set(listed=["1-4x8x8", "2x8x8", "9x9x9"], grid=[])
    assert [str(s) for s in shapes] == ["1x8x8", "2x8x8", "4x8x8", "9x9x9"]


@pytest.mark.parametrize("text", ["5-3x8x8", "a-4x8x8", "1-x8x8", "1-4x8"])
def test_bad_ranges_say_the_form(text):
    with pytest.raises(ShapeError, match="LO-HI|LO <= HI|MxNxK"):
        parse_shapes(text)


def test_the_config_takes_a_range():
    c, _ = compose(["shapes=inline", "shapes.list=[1-8x4096x4096]", "evaluator=simulated", "llm=none"])
    assert [s.M for s in build_shape_set(listed=c.shapes.list, grid=c.shapes.grid)] == [1, 2, 4, 8]


def test_segments_are_runs_of_one_launch_and_skip_unsupported_ms():
    segs = segments(parse_declaration(DECL), 60, 130, 256, 512, num_sms=132)
    # the grid changes at M = 64 and 128; the box at 64; M = 65, 70, ... are unsupported
    assert all(s["m_lo"] <= s["m_hi"] for s in segs)
    covered = [m for s in segs for m in range(s["m_lo"], s["m_hi"] + 1)]
    assert covered == [m for m in range(60, 131) if m % 5]
    for s in segs:
        for m in (s["m_lo"], s["m_hi"]):
            assert s["grid"] == [2, -(-m // 64), 1] and s["tensor_maps"][0]["box"] == [64, min(m, 64)]
    assert launch_values(segs[0]) == [2, 1, 1, 256, 1, 1, 1024, 0, 0, 0, 0, 64, 61, 128]


def _cells(speedups: dict[int, float | None]) -> list[dict]:
    decl = parse_declaration(DECL)
    return [{"M": m, "N": 256, "K": 512, "name": f"k{m}", "decl": decl, "recorded_speedup": s}
            for m, s in speedups.items()]


def test_each_kernel_serves_the_ms_above_the_cell_below_and_slow_ones_are_not_used():
    (table,) = build_tables(_cells({64: 1.5, 16: 1.3, 200: 1.0 + NOISE / 2, 300: None}), num_sms=132)
    assert [(r["m_lo"], r["m_hi"], r["kernel"]) for r in table["ranges"]] == [
        (16, 16, "k16"), (17, 64, "k64"), (65, 200, "k200"), (201, 300, "k300")]
    assert [r["use"] for r in table["ranges"]] == [True, True, False, False]
    assert "needs >= 1.02x" in table["ranges"][2]["reason"] and "no torch time" in table["ranges"][3]["reason"]


def test_find_routes_every_m_and_says_why():
    tables = build_tables(_cells({16: 1.3, 64: 1.5, 200: 1.01}), num_sms=132)
    _, seg, why = find(tables, 41, 256, 512)
    assert seg["m_lo"] <= 41 <= seg["m_hi"] and "k64 serves M 17-64" in why
    assert "N=256, K=1024" in find(tables, 40, 256, 1024)[2]
    assert "outside the exported ranges" in find(tables, 201, 256, 512)[2] and find(tables, 8, 256, 512)[1] is None
    assert "does not support M=45" in find(tables, 45, 256, 512)[2]
    assert "not used" in find(tables, 101, 256, 512)[2]
    # on a GPU: only where re-checked on that GPU
    assert "not re-checked" in find(tables, 41, 256, 512, gpu="NVIDIA H200")[2]
    rng = tables[0]["ranges"][1]
    _check(rng, evo=1.0, torch=1.5, gpu="NVIDIA H100")
    assert "re-checked on NVIDIA H100, not on this NVIDIA H200" in find(tables, 41, 256, 512, gpu="NVIDIA H200")[2]
    assert find(tables, 41, 256, 512, gpu="NVIDIA H100")[1] is not None


def _check(rng, *, evo, torch, gpu="NVIDIA H200", correct=True, spread=0.01):
    points = [{"M": m, "evo_ms": [evo * (1 + spread * i) for i in range(7)],
               "torch_ms": [torch * (1 + spread * i) for i in range(7)]} for m in timing_points(rng)]
    apply_check(rng, {"gpu": gpu, "num_sms": 132, "correct": correct, "checked_Ms": 48, "max_rel_err": 1e-4,
                      "error": None if correct else "M=33: normwise relative error 1e-2", "points": points})


def test_the_re_check_decides_never_slower():
    tables = build_tables(_cells({16: 1.3, 64: 1.5}), num_sms=132)
    rng = tables[0]["ranges"][1]
    _check(rng, evo=1.0, torch=1.3)
    assert rng["use"] and "1.300x torch" in rng["reason"] and rng["check"]["points"][0]["faster"]
    _check(rng, evo=1.0, torch=1.01)
    assert not rng["use"] and "not faster beyond noise" in rng["reason"]
    _check(rng, evo=1.0, torch=1.3, correct=False)
    assert not rng["use"] and "wrong results" in rng["reason"]
    _check(rng, evo=1.0, torch=1.05, spread=0.1)  # 5% faster at the median, but the replays overlap
    assert not rng["use"]


def test_faster_beyond_noise_needs_the_margin_and_separated_quartiles():
    assert faster_beyond_noise([1.0] * 5, [1.1] * 5) == (True, pytest.approx(1.1))
    assert not faster_beyond_noise([1.0] * 5, [1.01] * 5)[0]
    evo = [1.0, 1.0, 1.0, 1.3, 1.3]
    torch_ms = [1.1, 1.1, 1.1, 1.1, 1.1]
    assert statistics.median(torch_ms) / statistics.median(evo) > 1 + NOISE and not faster_beyond_noise(evo, torch_ms)[0]
    assert faster_beyond_noise([1.0], [1.5]) == (True, 1.5)  # one value each: the margin alone


def test_check_points_cover_short_ranges_fully_and_long_ones_densely_with_every_edge():
    (table,) = build_tables(_cells({16: 1.3, 40: 1.3, 3000: 1.3}), num_sms=132)
    short, long = table["ranges"][1], table["ranges"][2]
    assert check_points(short) == [m for m in range(17, 41) if m % 5]
    pts = check_points(long)  # a launch change at every fifth M: a spread of edges, not all 1800
    assert pts[0] == 41 and pts[-1] == 2999 and 64 <= len(pts) <= 400
    decl = parse_declaration(DECL.replace("// @evo requires = M % 5 != 0", ""))
    (table,) = build_tables([{"M": m, "N": 256, "K": 512, "name": f"k{m}", "decl": decl, "recorded_speedup": 1.3}
                             for m in (40, 3000)], num_sms=132)
    pts = check_points(table["ranges"][1])
    edges = {m for s in table["ranges"][1]["segments"] for m in (s["m_lo"], s["m_hi"])}
    assert edges <= set(pts) and pts[0] == 41 and pts[-1] == 3000 and 64 <= len(pts) <= 400
    assert timing_points(short) == [17, 28, 39]


def test_check_points_reach_every_residue_of_m_and_are_not_a_fixed_sample():
    # a kernel wrong only where M mod 8 is 3..7 (partial tiles) passed the old even spread from a fixed start
    (table,) = build_tables(_cells({512: 1.3, 1024: 1.3}), num_sms=132)
    rng = table["ranges"][1]
    draws = [tuple(check_points(rng)) for _ in range(40)]
    for pts in draws:
        inside = [m for m in pts if 512 < m <= 1024]
        assert {m % 16 for m in inside} == set(range(16)), pts
        assert len(inside) >= 64
    assert len(set(draws)) > 1  # the spread's start is drawn afresh


def with_hidden_printf(source: str) -> str:
    """source with a printf call hidden from the static checks behind a macro (only its cubin tells)."""
    entry = source.index("extern \"C\" __global__")
    body = source.index("{", source.index("hgemm(", entry)) + 1
    return source[:entry] + "#define SAY printf\n" + source[entry:body] + " if (M < 0) SAY(\"%d\", M);" + source[body:]


def simulated_sweep(archive, shapes: str, budget: int) -> None:
    """`evo sweep` of the shortlist on the test double into `archive`."""
    out = subprocess.run([sys.executable, "-m", "evo", "sweep", "evaluator=simulated", "shapes=inline",
                          f"shapes.list=[{shapes}]", f"sweep.budget={budget}", "sweep.sample=shortlist",
                          "llm=none", "search.progress=false", f"archive.path={archive}"],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]


def test_export_writes_dispatch_tables(tmp_path):
    archive = tmp_path / "r.sqlite"
    simulated_sweep(archive, "1-8x4096x1024,77x4096x1024", 2)
    out = subprocess.run([sys.executable, "-m", "evo", "export", str(archive), "--out", str(tmp_path / "exp"),
                          "--no-cubins"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    manifest = json.loads((tmp_path / "exp" / "manifest.json").read_text())
    assert manifest["format"] == "evo-export/2" and manifest["num_sms"] > 0
    assert all("(SIMULATED: modelled, not measured)" in r["reason"]  # each range says so, not only the top
               for t in manifest["tables"] for r in t["ranges"] if r["recorded_speedup"] is not None)
    (table,) = manifest["tables"]
    assert (table["N"], table["K"]) == (4096, 1024)
    assert [(r["m_lo"], r["m_hi"]) for r in table["ranges"]] == [(1, 1), (2, 2), (3, 4), (5, 8), (9, 77)]
    kernels = {k["file"].removesuffix(".cu"): k for k in manifest["kernels"]}
    for r in table["ranges"]:
        assert r["check"] is None
        assert r["use"] == (r["recorded_speedup"] is not None and r["recorded_speedup"] >= 1 + NOISE)
        # at the M it was searched at, the table's launch is the one the evaluator recorded
        recorded = kernels[r["kernel"]]
        (seg,) = [s for s in r["segments"] if s["m_lo"] <= r["tuned_M"] <= s["m_hi"]]
        fields = ("grid", "block", "smem", "cluster")
        assert [seg[f] for f in fields] == [recorded[f] for f in fields]
        assert [(t["operand"], t["box"], t["swizzle"]) for t in seg["tensor_maps"]] == [
            (t["operand"], t["box"], t["swizzle"]) for t in recorded["tensor_maps"]]
    d = Dispatcher(tmp_path / "exp")
    seg, why = d.route(50, 4096, 1024, gpu="NVIDIA H200")
    assert seg is None and ("not re-checked" in why or "not used" in why)
    out = subprocess.run([sys.executable, "-m", "evo", "export", str(archive), "--out", str(tmp_path / "exp"),
                          "--no-cubins", "--verify"], capture_output=True, text=True, timeout=300)
    assert out.returncode != 0 and "needs" in out.stderr and "Traceback" not in out.stderr


def test_export_leaves_out_an_elite_whose_cubin_calls_the_device_runtime(tmp_path, caplog):
    """A kernel archived before the evaluator read cubins could hide printf behind a macro: export compiles
    it, finds vprintf undefined in its cubin and leaves that shape to torch (no .cu, no manifest entry)."""
    import sqlite3

    from evo.export import export
    archive = tmp_path / "r.sqlite"
    simulated_sweep(archive, "64x4096x1024,128x4096x1024", 1)
    db = sqlite3.connect(archive)
    (kid, source), = db.execute("select k.id, k.source from kernels k join evaluations e on e.kernel_id = k.id "
                                "where e.M = 64 and e.status = 'ok' limit 1")
    hidden = with_hidden_printf(source)
    with db:
        db.execute("update kernels set source = ? where id = ?", (hidden, kid))
    db.close()
    with caplog.at_level("WARNING"):
        manifest = export(str(archive), str(tmp_path / "exp"))
    assert [(k["M"], k["N"], k["K"]) for k in manifest["kernels"]] == [(128, 4096, 1024)]
    assert not (tmp_path / "exp" / "hgemm_64x4096x1024.cu").exists()
    assert "hgemm_64x4096x1024: not exported: the compiled kernel calls vprintf" in caplog.text


def test_an_old_manifest_is_refused_with_what_to_do(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "evo-export/1", "kernels": []}))
    with pytest.raises(Exception, match="export it again"):
        Dispatcher(tmp_path)


class _Stand:
    """Stands in for a torch tensor's attributes in the routing checks (no torch in CI)."""

    def __init__(self, shape, dtype="torch.float16", cuda=True, contiguous=True, ptr=256, device="cuda:0"):
        self.shape, self.dtype, self.is_cuda, self._c, self._p, self.device = shape, dtype, cuda, contiguous, ptr, device

    def dim(self):
        return len(self.shape)

    def is_contiguous(self):
        return self._c

    def data_ptr(self):
        return self._p


def test_tensor_problems_are_named():
    a, b = _Stand((8, 16)), _Stand((16, 32))
    assert tensor_problem(a, b) is None
    assert "not a CUDA" in tensor_problem(_Stand((8, 16), cuda=False), b)
    assert "torch.float32" in tensor_problem(_Stand((8, 16), dtype="torch.float32"), b)
    assert "3 dimensions" in tensor_problem(_Stand((2, 8, 16)), b)
    assert "W.T contiguous" in tensor_problem(a, _Stand((16, 32), contiguous=False))
    assert "aligned" in tensor_problem(_Stand((8, 16), ptr=258), b)
    assert "inner dimensions" in tensor_problem(a, _Stand((8, 32)))


def test_explain_says_torch_runs_when_the_extension_is_missing(tmp_path, monkeypatch):
    tables = build_tables(_cells({16: 1.3}), num_sms=132)
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "evo-export/2", "kernels": [], "tables": [
        {**t, "ranges": [{**r, "segments": r["segments"]} for r in t["ranges"]]} for t in tables]}))
    monkeypatch.setattr(extension, "_state", {"module": None, "why": "the evo.dispatch extension could not be built"})
    assert Dispatcher(tmp_path).explain(_Stand((16, 512)), _Stand((512, 256))).startswith(
        "torch: the evo.dispatch extension could not be built")


def test_without_the_extension_matmul_and_linear_are_torchs_own(tmp_path, monkeypatch):
    from evo.dispatch.dispatcher import torch_linear, torch_matmul
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "evo-export/2", "kernels": [], "tables": []}))
    monkeypatch.setattr(extension, "_state", {"module": None, "why": "the evo.dispatch extension could not be built"})
    d = Dispatcher(tmp_path)
    assert d.functions() == (torch_matmul, torch_linear) and d.handle is None


def test_serves_only_shapes_with_a_range_in_use_on_this_gpu(tmp_path, monkeypatch):
    """patch() replaces a layer only where serves() is True: a table whose every range runs torch (or
    no extension at all) leaves the nn.Linear as it is, so its calls pay no fallback cost."""
    tables = build_tables(_cells({16: 1.3, 64: 1.5}), num_sms=132)
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "evo-export/2", "kernels": [], "tables": tables}))
    n, k = tables[0]["N"], tables[0]["K"]
    monkeypatch.setattr(extension, "_state", {"module": None, "why": "the evo.dispatch extension could not be built"})
    assert not Dispatcher(tmp_path, checked=False).serves(n, k)  # no extension: torch runs every call
    monkeypatch.setattr(Dispatcher, "build", lambda self: 0)
    d = Dispatcher(tmp_path, checked=False)
    assert d.serves(n, k) and not d.serves(n + 1, k)
    d = Dispatcher(tmp_path)  # checked: nothing was re-checked on this GPU
    d.gpu = "NVIDIA H200"
    assert not d.serves(n, k)
    for rng in d.tables[0]["ranges"]:
        rng["check"] = {"gpu": "NVIDIA H200"}
    assert d.serves(n, k)
    for rng in d.tables[0]["ranges"]:
        rng["use"] = False
    assert not d.serves(n, k)


def test_torch_points_are_the_gaps_between_used_ranges_and_the_m_above():
    (table,) = build_tables(_cells({16: 1.3, 64: 1.0, 200: 1.5}), num_sms=132)
    # used: k16 (M 16) and k200 (M 65-200, less every fifth M); torch: 1-15, 17-65, the fifths, 201 up
    pts = torch_points(table, most=100)
    assert {1, 8, 15, 17, 41, 65, 201} <= set(pts) and {70, 75, 200} <= set(pts)
    assert not {16, 66, 199} & set(pts)
    short = torch_points(table)
    assert len(short) == LAYOUT_POINTS and short[0] == 1 and short[-1] == 201
    for rng in table["ranges"]:
        rng["use"] = False
    assert torch_points(table) == [1, 100, 200, 201]  # no kernel in use: torch serves 1..200 and above


def _layout(table, *, kn, nk, gpu="NVIDIA H200", spread=0.01):
    points = [{"M": m, "kn_ms": [kn * (1 + spread * i) for i in range(7)], "nk_ms": [nk * (1 + spread * i) for i in range(7)]}
              for m in torch_points(table)]
    apply_layout_check(table, {"gpu": gpu, "points": points, "at": "now"})


def test_the_layout_check_records_where_the_kn_weight_is_slower_beyond_noise():
    (table,) = build_tables(_cells({16: 1.3, 64: 1.5}), num_sms=132)
    assert layout_verdict(table, "NVIDIA H200")[0] is None  # not re-checked yet: unknown
    _layout(table, kn=1.13, nk=1.0)
    rec = table["torch_layout"]
    assert rec["slower_at"] == torch_points(table) and rec["points"][0]["ratio"] == pytest.approx(1.13)
    slower, why = layout_verdict(table, "NVIDIA H200")
    assert slower and "slower beyond noise" in why and "1.130x" in why
    other = layout_verdict(table, "NVIDIA H100")
    assert other[0] is None and "not on this NVIDIA H100" in other[1]
    assert layout_verdict(table, None)[0]  # unchecked dispatcher: the record decides alone
    _layout(table, kn=1.01, nk=1.0)  # within the 2% noise
    assert table["torch_layout"]["slower_at"] == [] and layout_verdict(table, "NVIDIA H200")[0] is False
    _layout(table, kn=1.05, nk=1.0, spread=0.1)  # 5% at the median, but the replays overlap
    assert not table["torch_layout"]["slower_at"]


def _layout_export(tmp_path, monkeypatch, *, kn):
    """An export of (N, K) = (256, 512) whose torch-layout record says [K, N] is `kn` x [N, K]; no extension."""
    tables = build_tables(_cells({16: 1.3, 64: 1.5}), num_sms=132)
    if kn is not None:
        _layout(tables[0], kn=kn, nk=1.0, gpu="NVIDIA H200")
    folder = tmp_path / f"exp{kn}"
    folder.mkdir()
    (folder / "manifest.json").write_text(json.dumps({"format": "evo-export/2", "kernels": [], "tables": tables}))
    monkeypatch.setattr(extension, "_state", {"module": None, "why": "the evo.dispatch extension could not be built"})
    return Dispatcher(folder, checked=False)


@pytest.mark.parametrize("kn,auto", [(1.13, "keep"), (1.0, "drop"), (None, "unknown")])
def test_fallback_weight_auto_follows_the_layout_record(tmp_path, monkeypatch, kn, auto):
    d = _layout_export(tmp_path, monkeypatch, kn=kn)
    assert fallback_choice("auto", d, 256, 512)[0] == auto
    assert fallback_choice("keep", d, 256, 512)[0] == "keep" and fallback_choice("drop", d, 256, 512)[0] == "drop"
    assert fallback_choice("auto", d, 256, 1024) == ("unknown", "no kernel was exported for N=256, K=1024")
    assert fallback_choice("auto", None, 256, 512)[0] == "unknown"
    with pytest.raises(EvoError, match="'auto', 'keep', 'drop'"):
        fallback_choice("both", d, 256, 512)


@pytest.mark.parametrize("mode,kn,kept", [("auto", 1.13, True), ("auto", 1.0, False), ("auto", None, False),
                                          ("keep", 1.0, True), ("drop", 1.13, False)])
def test_linear_keeps_nn_linears_weight_where_asked_and_its_torch_path_uses_it(tmp_path, monkeypatch, mode, kn, kept):
    torch = pytest.importorskip("torch")
    from evo.dispatch import Linear
    d = _layout_export(tmp_path, monkeypatch, kn=kn)
    plain = torch.nn.Linear(512, 256, bias=True)
    layer = Linear.from_linear(plain, d, fallback_weight=mode)
    assert (layer.weight is not None) == kept and layer.extra_bytes == (256 * 512 * 4 if kept else 0)
    assert layer.fallback == ("keep" if kept else "drop" if kn is not None or mode == "drop" else "unknown")
    x = torch.randn(3, 5, 512)
    with torch.no_grad():
        ref = plain(x)
        if kept:  # the torch path multiplies by W [N, K] alone: nn.Linear's own ops, bit for bit
            layer.weight_t.zero_()
            assert torch.equal(layer(x), ref)
        else:
            torch.testing.assert_close(layer(x), ref)
            assert "weight" not in layer.state_dict()


def test_patch_reports_which_layers_keep_two_copies_and_the_bytes(tmp_path, monkeypatch, caplog):
    torch = pytest.importorskip("torch")
    import evo.dispatch
    d = _layout_export(tmp_path, monkeypatch, kn=1.13)
    monkeypatch.setattr(Dispatcher, "serves", lambda self, n, k: (n, k) == (256, 512))
    model = torch.nn.Sequential(torch.nn.Linear(512, 256, bias=False), torch.nn.ReLU(), torch.nn.Linear(256, 512))
    with caplog.at_level("INFO", logger="evo.dispatch.linear"):
        assert evo.dispatch.patch(model, d) == ["0"]
    report = evo.dispatch.memory_report(model)
    assert report["keep"] == {"0": 256 * 512 * 4} and report["extra_bytes"] == 256 * 512 * 4
    assert "1 evo.dispatch.Linear keep W [N, K] beside W.T" in caplog.text and "+0.5 MiB: 0;" in caplog.text
    assert caplog.records[-1].levelname == "WARNING" and "slower beyond noise" in report["reasons"]["0"]
    assert "fallback_weight='keep' (+524288 bytes)" in repr(model[0])
    dropped = torch.nn.Sequential(torch.nn.Linear(512, 256, bias=False))
    evo.dispatch.patch(dropped, d, fallback_weight="drop")
    assert evo.dispatch.memory_report(dropped)["drop"] == ["0"] and evo.dispatch.memory_report(dropped)["extra_bytes"] == 0


def _fake_build_env(monkeypatch, tmp_path, *, preload_error: str | None = None, reentrant: bool | None = None) -> dict:
    """An export of k16 (no cubin, a source nvcc fails on) and k64 (a cubin), a stand-in extension that
    records what build() adds, and a stand-in torch.cuda that names an H200."""
    import sys
    import types
    tables = build_tables(_cells({16: 1.3, 64: 1.5}), num_sms=132)
    (tmp_path / "k16.cu").write_text("this is not CUDA")
    (tmp_path / "k64.cubin").write_bytes(b"cubin")
    (tmp_path / "manifest.json").write_text(json.dumps({"format": "evo-export/2", "tables": tables, "kernels": [
        {"M": 16, "N": 256, "K": 512, "file": "k16.cu", "cubin": None, "nvcc_flags": ["-arch=sm_90a"], "pdl": True},
        {"M": 64, "N": 256, "K": 512, "file": "k64.cu", "cubin": "k64.cubin", "nvcc_flags": [], "pdl": True,
         **({} if reentrant is None else {"reentrant": reentrant})}]}))
    seen: dict = {"tables": 0, "kernels": [], "segments": [], "capturing": False}

    def preload(handle, device):
        if preload_error:
            raise RuntimeError(preload_error)

    ext = types.SimpleNamespace(
        new_table=lambda: seen.__setitem__("tables", seen["tables"] + 1) or seen["tables"],
        add_kernel=lambda h, cubin, smem, big, pdl, reentrant: seen["kernels"].append((cubin, reentrant))
        or len(seen["kernels"]) - 1,
        add_segment=lambda h, n, k, lo, hi, kernel, launch: seen["segments"].append((lo, hi, kernel)),
        preload=preload, driver_has_pdl=lambda: True, matmul="ext.matmul", linear="ext.linear")
    monkeypatch.setattr(extension, "_state", {"module": ext})
    monkeypatch.setattr(extension, "_cuda_home", lambda: None)
    cuda = types.SimpleNamespace(current_device=lambda: 0, get_device_name=lambda d=None: "NVIDIA H200",
                                 is_current_stream_capturing=lambda: seen["capturing"])
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    return seen


def test_a_kernel_that_cannot_be_had_runs_torch_with_one_warning_naming_its_file(tmp_path, monkeypatch, caplog):
    # a failed nvcc used to escape every call (and build a new table each time)
    seen = _fake_build_env(monkeypatch, tmp_path)
    d = Dispatcher(tmp_path, checked=False)
    assert d.build() == 1 and d.build() == 1 and seen["tables"] == 1
    assert seen["kernels"] == [(b"cubin", False)]  # k64's, and only k64's ranges (M 17-64); no `reentrant`: not
    assert seen["segments"] and {k for _, _, k in seen["segments"]} == {0} and min(lo for lo, _, _ in seen["segments"]) == 17
    (warning,) = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert "k16.cu" in warning and "nvcc" in warning and "run torch" in warning
    n, k = d.tables[0]["N"], d.tables[0]["K"]
    assert d.explain(_Stand((16, k)), _Stand((k, n))).startswith("torch: kernel k16 is not available here (nvcc failed")
    assert d.explain(_Stand((64, k)), _Stand((k, n))).startswith("evo:")


def test_an_exported_cubin_that_calls_the_device_runtime_is_not_loaded(tmp_path, monkeypatch, caplog, compiler):
    """A cubin planted in an export folder (or exported before the check) that calls printf: evo.dispatch
    refuses it as evo export would, and its ranges run torch."""
    from evo.families import FAMILIES
    seen = _fake_build_env(monkeypatch, tmp_path)
    hidden = with_hidden_printf(FAMILIES["ampere"].render(FAMILIES["ampere"].default))
    (tmp_path / "k64.cubin").write_bytes(compiler.compile(hidden).cubin)
    d = Dispatcher(tmp_path, checked=False)
    d.build()
    assert seen["kernels"] == [] and "k64" in d.unavailable and "calls vprintf" in d.unavailable["k64"]
    assert any("k64.cu" in r.getMessage() and "run torch" in r.getMessage() for r in caplog.records)


def test_kernels_this_gpu_cannot_load_leave_torch_running_every_call_and_explain_says_why(tmp_path, monkeypatch):
    seen = _fake_build_env(monkeypatch, tmp_path, preload_error="CUDA_ERROR_NO_BINARY_FOR_GPU")
    d = Dispatcher(tmp_path, checked=False)
    assert d.build() is None and d.build() is None and seen["tables"] == 1
    assert d.functions()[0].__name__ == "torch_matmul"
    why = d.explain(_Stand((16, 512)), _Stand((512, 256)))
    assert why.startswith("torch: evo.dispatch: the kernels of") and "CUDA_ERROR_NO_BINARY_FOR_GPU" in why


@pytest.mark.parametrize("reentrant", [True, False])
def test_the_extension_learns_which_kernels_are_not_reentrant(tmp_path, monkeypatch, reentrant):
    # the C++ side runs such a kernel only on the first stream it is called on, per device (torch elsewhere)
    seen = _fake_build_env(monkeypatch, tmp_path, reentrant=reentrant)
    Dispatcher(tmp_path, checked=False).build()
    assert seen["kernels"] == [(b"cubin", reentrant)]


def test_explain_names_an_input_that_needs_a_gradient():
    pytest.importorskip("torch")
    a = _Stand((16, 512))
    a.requires_grad = True
    assert tensor_problem(a, _Stand((512, 256))) == "an input needs a gradient (the kernels have no backward)"


def test_a_first_call_inside_a_graph_capture_says_to_configure_before_it(tmp_path, monkeypatch):
    seen = _fake_build_env(monkeypatch, tmp_path, reentrant=True)
    seen["capturing"] = True
    with pytest.raises(EvoError, match="configure"):
        Dispatcher(tmp_path, checked=False).build()
    assert seen["tables"] == 0  # nothing loaded, nothing half-built


def test_a_kernel_with_module_state_is_exported_as_not_reentrant():
    # by its declarations, not by the name of split-K's workspace: an evolved kernel may name its own
    from evo.export import keeps_module_state
    from evo.families import FAMILIES
    hopper = FAMILIES["hopper"]
    assert keeps_module_state(hopper.render(dict(hopper.default, SPLIT_K=2, PERSISTENT=0)))
    assert not keeps_module_state(hopper.render(dict(hopper.default)))
    assert keeps_module_state("__device__ unsigned int launches;\n")
    assert keeps_module_state("static __device__ __align__(16) float scratch[4096];\n")
    assert not keeps_module_state("__device__ __forceinline__ float twice(float x) { return 2 * x; }\n")
    assert not keeps_module_state("__device__ float twice(\n    float x);\n")


def test_without_torch_the_torch_parts_say_what_to_install():
    import importlib.util
    if importlib.util.find_spec("torch") is not None:
        pytest.skip("torch is installed here")
    import evo.dispatch
    with pytest.raises(EvoError, match="needs torch"):
        evo.dispatch.patch  # noqa: B018 -- the attribute itself imports torch
