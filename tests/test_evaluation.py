"""The evaluation pipeline with the CPU test double: containment, dispatch, labelling."""
import json

import pytest

from evo.archive import Archive
from evo.config import EvaluatorConfig
from evo.core.kernel import Candidate
from evo.core.records import Status
from evo.core.shapes import Shape
from evo.evaluation.evaluator import Evaluator
from evo.families import FAMILIES

GOOD = FAMILIES["ampere"].render(FAMILIES["ampere"].default)


def marked(behaviour: str) -> Candidate:
    return Candidate.make(GOOD.replace("#include <stdint.h>", f"#include <stdint.h>\n// evo-sim: {behaviour}"))


@pytest.fixture
def evaluator(tmp_path, compile_cache):
    archive = Archive.open(tmp_path / "a.sqlite")
    run = archive.start_run(kind="test", config={}, seed=0, backend="simulated")
    cfg = EvaluatorConfig(backend="simulated", timeout_s=2, cache_dir=str(compile_cache), gpus=[])
    ev = Evaluator(cfg, archive=archive, run_id=run).start()
    yield ev
    ev.close()


def test_bad_kernels_are_contained_and_the_next_one_runs(evaluator):
    s = Shape(256, 256, 1024)
    good = Candidate.make(GOOD)
    pairs = [(marked("hang"), s), (good, s), (marked("fault"), s), (good, Shape(128, 128, 128)),
             (marked("crash"), s), (good, Shape(64, 64, 64)), (marked("fp16acc"), s), (marked("stateful"), s)]
    results = {(e.kernel_id, e.shape): str(e.status) for e in evaluator.evaluate(pairs)}
    assert [results[(c.id, s)] for c, s in pairs] == ["timeout", "ok", "fault", "ok", "fault", "ok", "incorrect",
                                                      "incorrect_after_timing"]
    assert evaluator.pool.restarts == 4  # hang, fault, and the crash twice (a silent death is re-run once)


def test_a_fault_on_a_later_shape_or_during_timing_is_the_kernels_and_loses_nothing_else(evaluator):
    """The bugs this guards against: a kernel's second fault came back as worker_error and the worker
    was not restarted (every later evaluation lost); a fault noticed during timing by torch (whose
    AcceleratorError is not a RuntimeError) was recorded as worker_error."""
    good, big = Candidate.make(GOOD), marked("fault-big-m")
    shapes = [Shape(64, 64, 64), Shape(256, 256, 256), Shape(512, 512, 512), Shape(128, 128, 128), Shape(1024, 128, 64)]
    pairs = [(big, s) for s in shapes] + [(good, s) for s in shapes]
    late, bug = marked("fault-timing"), marked("harness-bug")
    pairs += [(late, shapes[0]), (good, Shape(96, 96, 96)), (bug, shapes[0]), (good, Shape(160, 160, 160))]
    by_pair = {(e.kernel_id, e.shape): str(e.status) for e in evaluator.evaluate(pairs)}
    assert len(by_pair) == len(pairs)
    assert [by_pair[(big.id, s)] for s in shapes] == ["ok", "fault", "fault", "ok", "fault"]
    assert [by_pair[(good.id, s)] for s in shapes] == ["ok"] * 5
    assert by_pair[(late.id, shapes[0])] == "fault"  # noticed during timing, not worker_error
    assert by_pair[(bug.id, shapes[0])] == "worker_error"  # evo's own trouble, said so
    assert by_pair[(good.id, Shape(96, 96, 96))] == by_pair[(good.id, Shape(160, 160, 160))] == "ok"
    assert evaluator.pool.restarts == 5  # three faults, the late fault, the harness error


def test_static_and_compile_failures_never_reach_the_worker(evaluator):
    rejected = Candidate.make(GOOD.replace("extern \"C\"", "int main() { return 0; }\nextern \"C\""))
    broken = Candidate.make(GOOD.replace("half2* dst", "half2* dst = nonsense;").replace("smem_u32(sA", "smem_u32(sX"))
    unsupported = Candidate.make(GOOD)
    pairs = [(rejected, Shape(64, 64, 64)), (broken, Shape(64, 64, 64)), (unsupported, Shape(64, 64, 63))]
    out = {e.kernel_id: e for e in evaluator.evaluate(pairs)}
    assert [out[c.id].status for c, _ in pairs] == [Status.REJECTED, Status.COMPILE_ERROR, Status.UNSUPPORTED]
    assert "main()" in out[rejected.id].error and "sX" in out[broken.id].error
    assert evaluator.pool.restarts == 0


def _at_entry(source: str, before: str, first: str) -> Candidate:
    """source with `before` above hgemm and `first` as the first statement of its body."""
    entry = source.index("extern \"C\" __global__")
    body = source.index("{", source.index("hgemm(", entry)) + 1
    return Candidate.make(source[:entry] + before + "\n" + source[entry:body] + first + source[body:])


def test_calls_the_preprocessor_hid_from_the_static_checks_are_refused_from_the_cubin(evaluator):
    """printf by an alias, device malloc by token pasting, assert's printing call declared by hand: the
    source checks see none of them, the cubin's undefined functions do (vprintf, malloc, free, __assertfail)."""
    alias = _at_entry(GOOD, "#define SAY printf", " if (M < 0) SAY(\"%d\", M);")
    pasted = _at_entry(GOOD, "#define J(a, b) a##b", " if (M < 0) { int* p = (int*)J(mal, loc)(8); J(fr, ee)(p); }")
    asserts = _at_entry(GOOD, 'extern "C" __device__ void __assertfail(const char*, const char*, unsigned, '
                              "const char*, unsigned long);", ' if (M < 0) __assertfail("a", "b", 1, "c", 1);')
    pairs = [(c, Shape(64, 64, 64)) for c in (alias, pasted, asserts, Candidate.make(GOOD))]
    out = {e.kernel_id: e for e in evaluator.evaluate(pairs)}
    assert [out[c.id].status for c, _ in pairs] == [Status.REJECTED] * 3 + [Status.OK], \
        [out[c.id].error for c, _ in pairs]
    assert "calls vprintf" in out[alias.id].error and "free, malloc" in out[pasted.id].error
    assert "calls __assertfail" in out[asserts.id].error  # it prints, too
    assert evaluator.pool.restarts == 0


def test_results_are_archived_and_labelled_simulated(evaluator):
    (e,) = list(evaluator.evaluate([(Candidate.make(GOOD), Shape(1024, 1024, 1024))]))
    assert e.ok and e.speedup and e.roofline_fraction and e.backend == "simulated"
    assert "SIMULATED" in e.gpu
    db = evaluator.archive.db
    row = next(db.query("select * from evaluations where id = ?", [e.id]))
    assert row["backend"] == "simulated" and row["status"] == "ok" and row["speedup"] == pytest.approx(e.speedup)
    libs = list(db.query("select library, backend from baselines"))
    assert {r["library"] for r in libs} == {"torch", "cublaslt_heuristic", "cublaslt_autotuned"}
    assert {r["backend"] for r in libs} == {"simulated"}
    peaks = list(db.query("select * from device_peaks"))
    assert peaks[0]["backend"] == "simulated"


def test_two_workers_share_the_jobs(tmp_path, compile_cache):
    cfg = EvaluatorConfig(backend="simulated", timeout_s=5, cache_dir=str(compile_cache), gpus=[0, 1])
    ev = Evaluator(cfg).start()
    try:
        assert len(ev.devices) == 2
        cands = [marked("slow") for _ in range(1)] + [FAMILIES["simt"].candidate(p) for p in FAMILIES["simt"].all_valid[:5]]
        pairs = [(c, Shape(128, 128, 128)) for c in cands] * 2
        gpus = [e.gpu for e in ev.evaluate(pairs)]
        assert len(gpus) == 12 and len(set(gpus)) == 2
    finally:
        ev.close()


def test_every_timing_mode_is_reported(tmp_path, compile_cache):
    cfg = EvaluatorConfig(backend="simulated", cache_dir=str(compile_cache), modes=["rotating", "hot", "server"],
                          mode="hot")
    ev = Evaluator(cfg).start()
    try:
        (e,) = list(ev.evaluate([(Candidate.make(GOOD), Shape(512, 512, 512))]))
    finally:
        ev.close()
    assert [t.mode for t in e.timings] == ["rotating", "hot", "server"]
    assert e.timing.mode == "hot" and e.time_ms == e.timings[1].median_ms
    assert e.library_ms and e.speedup == pytest.approx(e.best_library_ms / e.time_ms)


def test_selftest_passes_every_case_on_the_test_double(tmp_path, compile_cache):
    """Each bad kernel carries an `evo-sim` marker that makes the double misbehave like the real
    kernel does on a GPU, so the self-test's bookkeeping (expected statuses, honest twins, the good
    kernel after each case) is checked here; the GPU test runs the same cases for real."""
    from evo.evaluation.selftest import CASES, run_selftest
    cfg = EvaluatorConfig(backend="simulated", timeout_s=2, cache_dir=str(compile_cache), gpus=[])
    ev = Evaluator(cfg).start()
    try:
        rows = run_selftest(ev)
    finally:
        ev.close()
    assert len(rows) == 2 * len(CASES)
    assert [r for r in rows if not r["pass"]] == []
    twins = [r["error"] for r in rows if "the speed of" in r["error"]]  # a modelled gain is never read as timed
    assert twins and all("(modelled: simulated)" in note for note in twins)


def test_a_shape_too_big_for_the_gpu_is_refused_before_any_work():
    from evo.core.errors import ConfigError
    from evo.core.records import DeviceInfo
    from evo.evaluation.limits import check_fits, evaluation_bytes
    gpu = DeviceInfo("H200", "u", 132, 60 << 20, 232448, memory_bytes=141 * 10**9)
    check_fits([Shape(16384, 16384, 16384), Shape(1, 4096, 4096)], [gpu])  # 16384^3 needs about 14 GiB
    assert 10 * 2**30 < evaluation_bytes(Shape(16384, 16384, 16384)) < 20 * 2**30
    with pytest.raises(ConfigError, match=r"1 shape\(s\) cannot fit the GPU's 131 GiB: 65536x65536x65536"):
        check_fits([Shape(64, 64, 64), Shape(65536, 65536, 65536)], [gpu])
    check_fits([Shape(65536, 65536, 65536)], [DeviceInfo("?", "u", 1, 1, 1)])  # unknown memory: no verdict


def test_compiled_jobs_reach_the_gpu_in_plan_order(evaluator):
    """With every compile done, the evaluations come back in the order given (one worker), so a
    sweep or search cut short has done its first-planned pairs, not whatever compiled first."""
    fam = FAMILIES["simt"]
    cands = [fam.candidate(p) for p in fam.all_valid[:4]]
    for c in cands:
        evaluator.prepare(c).result()
    shapes = [Shape(64, 64, 64), Shape(128, 64, 32)]
    pairs = [(c, s) for s in shapes for c in reversed(cands)]
    got = [(e.kernel_id, e.shape) for e in evaluator.evaluate(pairs)]
    assert got == [(c.id, s) for c, s in pairs]


def test_a_kernel_far_slower_than_the_fastest_on_its_shape_gets_one_replay(tmp_path, compile_cache):
    """Racing (evaluator.race_factor): once a kernel is timed on a shape, a later one whose first
    replay is over race_factor x slower stops there; one within it, and any kernel when racing is
    off or not asked for (re-timing), gets every replay."""
    s = Shape(1024, 1024, 1024)
    fast, near, slow = (Candidate.make(FAMILIES[f].render(FAMILIES[f].default)) for f in ("ampere", "hopper", "simt"))

    def samples(race_factor: float, race: bool = True) -> dict[str, int]:
        cfg = EvaluatorConfig(backend="simulated", timeout_s=30, cache_dir=str(compile_cache), gpus=[],
                              race_factor=race_factor)
        ev = Evaluator(cfg).start()
        try:
            out = {e.kernel_id: e for e in ev.evaluate([(fast, s)], race=race)}
            out |= {e.kernel_id: e for e in ev.evaluate([(near, s), (slow, s)], race=race)}
        finally:
            ev.close()
        assert all(e.status == Status.OK for e in out.values())
        return {name: len(out[c.id].timings[0].samples_ms) for name, c in (("fast", fast), ("near", near), ("slow", slow))}

    assert samples(1.3) == {"fast": 5, "near": 5, "slow": 1}  # simulated: near 1.2x, slow 10x the fast one
    assert samples(0.0) == {"fast": 5, "near": 5, "slow": 5}
    assert samples(1.3, race=False) == {"fast": 5, "near": 5, "slow": 5}


def test_a_resumed_run_races_against_the_kernels_it_timed_before(tmp_path, compile_cache):
    s = Shape(1024, 1024, 1024)
    fast, slow = (Candidate.make(FAMILIES[f].render(FAMILIES[f].default)) for f in ("ampere", "simt"))
    archive = Archive.open(tmp_path / "a.sqlite")
    run = archive.start_run(kind="test", config={}, seed=0, backend="simulated")
    cfg = EvaluatorConfig(backend="simulated", timeout_s=30, cache_dir=str(compile_cache), gpus=[])
    for cand in (fast, slow):  # two evaluators on one run: the second starts as a resumed run does
        ev = Evaluator(cfg, archive=archive, run_id=run).start()
        try:
            (e,) = ev.evaluate([(cand, s)])
        finally:
            ev.close()
    assert e.kernel_id == slow.id and e.ok and e.raced(cfg.replays)


def test_evaluator_pdl_launches_only_kernels_whose_ptx_waits_first(tmp_path, compile_cache):
    """evaluator.pdl: a kernel is timed as a programmatic dependent launch only where its PTX waits for
    the grid before it first (so that it cannot overlap what ran before it) and does not signal its
    dependents early (which in replays would start its own next launch sooner); off, nothing is."""
    s = Shape(256, 256, 1024)
    wait = 'asm volatile("griddepcontrol.wait;" ::: "memory");'
    signal = 'asm volatile("griddepcontrol.launch_dependents;" ::: "memory");'
    waits = Candidate.make(GOOD)
    early = Candidate.make(GOOD.replace(wait, signal))
    signals = Candidate.make(GOOD.replace(wait, wait + "\n    " + signal))
    assert len({waits.source, early.source, signals.source}) == 3
    for pdl, expected in ((True, {waits.id: True, early.id: False, signals.id: False}),
                          (False, {waits.id: False, early.id: False, signals.id: False})):
        cfg = EvaluatorConfig(backend="simulated", timeout_s=30, cache_dir=str(compile_cache), gpus=[], pdl=pdl)
        ev = Evaluator(cfg).start()
        try:
            for cand in (waits, early, signals):
                prepared = ev.prepare(cand).result()
                assert prepared.status is None and prepared.pdl is expected[cand.id]
                job = ev._job(cand, s, prepared, None, False, [])
                launch = job.prepare(ev.devices[0])["launch"]
                assert launch.get("pdl", False) is expected[cand.id]
            assert {e.kernel_id: str(e.status) for e in ev.evaluate([(waits, s), (early, s), (signals, s)])} == {
                waits.id: "ok", early.id: "ok", signals.id: "ok"}
        finally:
            ev.close()


def test_a_compile_cached_before_the_pdl_verdict_was_recorded_is_checked_from_its_ptx(tmp_path):
    """A cache entry without the compile's PDL verdict (made before it was recorded) is not taken as a
    no: the evaluator reads the kernel's PTX, so the kernel is timed as it would be fresh, and the
    verdict goes into the entry (one nvcc -ptx per kernel, not one per run)."""
    assert not EvaluatorConfig().pdl  # the default since session 31: plain launches
    cfg = EvaluatorConfig(backend="simulated", timeout_s=30, cache_dir=str(tmp_path), gpus=[], pdl=True)
    ev = Evaluator(cfg).start()
    try:
        cand = Candidate.make(GOOD)
        assert ev.compiler.compile(cand.source).pdl_timing is True
        meta = tmp_path / f"{ev.compiler.key(cand.source)}.json"
        meta.write_text(json.dumps({k: v for k, v in json.loads(meta.read_text()).items() if k != "pdl_timing"}))
        assert ev.compiler.compile(cand.source).pdl_timing is None
        assert ev.prepare(cand).result().pdl is True
        assert json.loads(meta.read_text())["pdl_timing"] is True
        assert ev.compiler.compile(cand.source).pdl_timing is True
    finally:
        ev.close()
