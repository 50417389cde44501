"""The libraries are timed on every shape and GPU before a run's first kernel (library-only jobs), so
that a kernel's job carries none. Session 22 measured why: a worker that had evaluated kernels read the
libraries up to 15% slower on small shapes than a fresh one. Simulated evaluator, real nvcc."""
from __future__ import annotations

import subprocess
import sys

import pytest

from evo.archive import Archive
from evo.config import EvaluatorConfig
from evo.core.shapes import Shape
from evo.evaluation.evaluator import Evaluator
from evo.evaluation.pool_api import make_pool
from evo.families import FAMILIES

SHAPES = [Shape(64, 64, 64), Shape(128, 64, 32)]


class RecordingPool:
    """A real (simulated) pool that notes every request as the worker receives it, in order."""

    def __init__(self, inner):
        self.inner, self.sent = inner, []

    @property
    def restarts(self):
        return self.inner.restarts

    def start(self):
        self.inner.start()
        return self

    @property
    def devices(self):
        return self.inner.devices

    @property
    def infos(self):
        return self.inner.infos

    def call_each(self, request, devices=None):
        for d in devices or self.devices:
            if request.get("op") == "evaluate":  # not the peaks, measured at the start
                self.sent.append((d, request))
        return self.inner.call_each(request, devices)

    def run(self, jobs):
        def noted(jobs):
            for job in jobs:
                if job is not None:
                    first = job.prepare

                    def prepare(info, job=job, first=first):
                        extra = first(info) if first else {}
                        self.sent.append((None, {**job.request, **extra}))
                        return extra
                    job.prepare = prepare
                yield job
        return self.inner.run(noted(jobs))

    def close(self):
        self.inner.close()


def evaluator(tmp_path, compile_cache, *, gpus=(), libraries=None, archive=None, wrap=RecordingPool):
    """A simulated evaluator on `wrap` (a RecordingPool or a subclass, given the real pool), and that pool."""
    cfg = EvaluatorConfig(backend="simulated", timeout_s=5, cache_dir=str(compile_cache), gpus=list(gpus))
    if libraries is not None:
        cfg.libraries = libraries
    archive = archive or Archive.open(tmp_path / "a.sqlite")
    run = archive.start_run(kind="test", config={}, seed=0, backend="simulated")
    pool = wrap(make_pool(cfg))
    return Evaluator(cfg, archive=archive, run_id=run, pool=pool).start(), pool


def test_every_shape_gets_its_libraries_before_any_kernel_and_the_kernels_jobs_carry_none(tmp_path, compile_cache):
    ev, pool = evaluator(tmp_path, compile_cache)
    try:
        assert ev.shapes_without_libraries(SHAPES) == SHAPES
        assert ev.time_libraries_first(SHAPES) == 2
        fam = FAMILIES["simt"]
        pairs = [(fam.candidate(p), s) for p in fam.all_valid[:2] for s in SHAPES]
        results = list(ev.evaluate(pairs))
        assert all(e.ok and e.speedup for e in results)  # every kernel has its libraries to compare with
        kinds = ["kernel" if msg.get("cubin") is not None else "libraries" for _, msg in pool.sent]
        assert kinds == ["libraries"] * 2 + ["kernel"] * 4
        assert all(not msg.get("libraries") for _, msg in pool.sent[2:])
        assert [msg["shape"] for _, msg in pool.sent[:2]] == [[s.M, s.N, s.K] for s in SHAPES]
        assert ev.time_libraries_first(SHAPES) == 0 and ev.shapes_without_libraries(SHAPES) == []
    finally:
        ev.close()


def test_each_gpu_of_the_pool_times_them_on_each_shape(tmp_path, compile_cache):
    ev, pool = evaluator(tmp_path, compile_cache, gpus=(0, 1))
    try:
        assert ev.time_libraries_first(SHAPES) == 4
        for info in ev.devices:
            for s in SHAPES:
                assert set(ev.library_times(info.key, s, ev.cfg.mode)) == set(ev.cfg.libraries)
        assert sorted(d for d, _ in pool.sent) == sorted(ev.pool.devices * 2)
    finally:
        ev.close()


def test_only_the_missing_libraries_are_timed_and_the_known_ones_stand(tmp_path, compile_cache):
    archive = Archive.open(tmp_path / "a.sqlite")
    ev, _ = evaluator(tmp_path, compile_cache, libraries=["torch"], archive=archive)
    try:
        ev.time_libraries_first(SHAPES[:1])
        gpu = ev.devices[0].key
        torch_ms = ev.library_times(gpu, SHAPES[0], ev.cfg.mode)["torch"]
    finally:
        ev.close()
    ev, pool = evaluator(tmp_path, compile_cache, libraries=["torch", "cublaslt_heuristic"], archive=archive)
    try:
        assert ev.shapes_without_libraries(SHAPES) == SHAPES  # the first lacks cuBLASLt, the second all
        ev.time_libraries_first(SHAPES)
        assert [msg["libraries"] for _, msg in pool.sent] == [["cublaslt_heuristic"], ["torch", "cublaslt_heuristic"]]
        assert ev.library_times(gpu, SHAPES[0], ev.cfg.mode)["torch"] == torch_ms
    finally:
        ev.close()


@pytest.mark.parametrize("command", ["sweep", "run"])
def test_a_sweep_and_a_search_say_they_time_the_libraries_first_once_per_archive(tmp_path, command):
    path = tmp_path / "a.sqlite"
    args = ["evaluator=simulated", "shapes=inline", "shapes.list=[64x64x64,128x64x32]", f"archive.path={path}"]
    args += (["sweep.budget=2", "sweep.sample=shortlist"] if command == "sweep" else
             ["llm=none", "search.max_evaluations=8", "islands.n=1", "islands.population=2", "search.children_per_island=2"])
    line = "timing the libraries (torch, cublaslt_heuristic, cublaslt_autotuned) on 2 shapes first"
    first = subprocess.run([sys.executable, "-m", "evo", command, *args], capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr[-2000:]
    assert line in first.stderr
    rows = Archive.open(path).db.execute("select alone, count(*) from baselines group by alone").fetchall()
    assert rows == [(1, 2 * 3)]  # every library on both shapes, alone; none beside a kernel
    if command == "sweep":  # once per archive (the search's call sites share the check)
        again = subprocess.run([sys.executable, "-m", "evo", command, *args], capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr[-2000:]
        assert "timing the libraries" not in again.stderr  # the archive has them for this GPU


class FailingPool(RecordingPool):
    """Library-only requests fail `fails` times (a reply without libraries, as after a hang), or raise
    as a cluster that lost its worker does (`raises`); then they reach the real pool."""

    def __init__(self, inner, *, fails: int = 0, raises: bool = False):
        super().__init__(inner)
        self.fails, self.raises = fails, raises

    def call_each(self, request, devices=None):
        if request.get("op") == "evaluate" and self.raises:
            raise OSError("Timed out trying to connect to the worker")
        if request.get("op") == "evaluate" and self.fails > 0:
            self.fails -= 1
            self.sent.append((None, request))
            return {d: {"type": "result", "gpu": info.key, "libraries": []}
                    for d, info in zip(self.devices, self.infos) if d in (devices or self.devices)}
        return super().call_each(request, devices)


def failing_evaluator(tmp_path, compile_cache, **kw):
    cfg = EvaluatorConfig(backend="simulated", timeout_s=5, cache_dir=str(compile_cache), gpus=[])
    archive = Archive.open(tmp_path / "a.sqlite")
    run = archive.start_run(kind="test", config={}, seed=0, backend="simulated")
    pool = FailingPool(make_pool(cfg), **kw)
    return Evaluator(cfg, archive=archive, run_id=run, pool=pool).start(), pool


def kernel_jobs_carry_libraries(ev, pool) -> list[list[str]]:
    fam = FAMILIES["simt"]
    list(ev.evaluate([(fam.candidate(fam.all_valid[0]), SHAPES[0])]))
    return [msg.get("libraries") for _, msg in pool.sent if msg.get("cubin") is not None]


def test_timings_from_beside_a_kernel_in_an_older_archive_are_taken_again_alone(tmp_path, compile_cache):
    archive = Archive.open(tmp_path / "a.sqlite")
    ev, _ = evaluator(tmp_path, compile_cache, archive=archive)
    try:
        gpu = ev.devices[0].key
        beside_a_kernel(archive, gpu, SHAPES[0], ev.cfg.libraries, ms=123.0)
        assert ev.shapes_without_libraries(SHAPES) == SHAPES
        ev.time_libraries_first(SHAPES)
        rows = archive.db.execute("select library, time_ms, alone from baselines where M = ? and N = ? and K = ?",
                                  [SHAPES[0].M, SHAPES[0].N, SHAPES[0].K]).fetchall()
        assert len(rows) == len(ev.cfg.libraries) and all(ms != 123.0 and alone == 1 for _, ms, alone in rows)
        assert all(ms != 123.0 for ms in ev.library_times(gpu, SHAPES[0], "rotating").values())
    finally:
        ev.close()


def test_a_library_that_fails_alone_is_tried_once_more(tmp_path, compile_cache, caplog):
    ev, pool = failing_evaluator(tmp_path, compile_cache, fails=1)
    try:
        assert ev.time_libraries_first(SHAPES[:1]) == 1
        assert len([m for _, m in pool.sent]) == 2 and "could not be timed alone" not in caplog.text
        assert kernel_jobs_carry_libraries(ev, pool) == [[]]
    finally:
        ev.close()


@pytest.mark.parametrize("failure, timed, warning", [
    # the first shape fails twice, the second is timed
    (dict(fails=2), 1, "64x64x64: torch, cublaslt_heuristic, cublaslt_autotuned could not be timed alone"),
    # a cluster that lost its worker: nothing more is tried in the phase
    (dict(raises=True), 0, "timing the libraries first stopped at 64x64x64 (OSError"),
])
def test_what_cannot_be_timed_alone_is_left_to_the_kernels_jobs_with_a_warning(tmp_path, compile_cache, caplog,
                                                                              failure, timed, warning):
    ev, pool = failing_evaluator(tmp_path, compile_cache, **failure)
    try:
        assert ev.time_libraries_first(SHAPES) == timed
        assert warning in caplog.text
        assert kernel_jobs_carry_libraries(ev, pool) == [list(ev.cfg.libraries)]
    finally:
        ev.close()


def test_each_gpu_is_asked_only_for_the_libraries_it_lacks(tmp_path, compile_cache):
    from evo.archive import records
    from evo.core.records import LibraryResult, Timing
    archive = Archive.open(tmp_path / "a.sqlite")
    ev, pool = evaluator(tmp_path, compile_cache, gpus=(0, 1), archive=archive)
    try:
        first = ev.devices[0]
        t = Timing(mode="rotating", median_ms=0.01, spread=0.0, samples_ms=(0.01,), launches=1, buffer_sets=1)
        records.put_baseline(archive, first.key, "simulated", SHAPES[0], LibraryResult("torch", "rotating", "ok", timing=t),
                             alone=True)
        ev.time_libraries_first(SHAPES[:1])
        asked = {d: msg["libraries"] for d, msg in pool.sent}
        assert asked == {ev.pool.devices[0]: ["cublaslt_heuristic", "cublaslt_autotuned"],
                         ev.pool.devices[1]: list(ev.cfg.libraries)}
        assert ev.library_times(first.key, SHAPES[0], "rotating")["torch"] == 0.01  # the one it had stands
    finally:
        ev.close()


def beside_a_kernel(archive, gpu, shape, libraries, ms=0.5):
    """Timings as a sweep before session 22 stored them: beside a kernel."""
    from evo.archive import records
    from evo.core.records import LibraryResult, Timing
    t = Timing(mode="rotating", median_ms=ms, spread=0.0, samples_ms=(ms,), launches=1, buffer_sets=1)
    for lib in libraries:
        records.put_baseline(archive, gpu, "simulated", shape, LibraryResult(lib, "rotating", "ok", timing=t))


def test_a_failure_alone_does_not_replace_a_good_timing_from_beside_a_kernel(tmp_path, compile_cache, caplog):
    ev, pool = failing_evaluator(tmp_path, compile_cache, fails=2)
    try:
        beside_a_kernel(ev.archive, ev.devices[0].key, SHAPES[0], ["torch"])
        ev.time_libraries_first(SHAPES[:1])
        assert "could not be timed alone" in caplog.text
        row = ev.archive.db.execute("select status, time_ms, alone from baselines where library = 'torch'").fetchone()
        assert row == ("ok", 0.5, 0)
        assert ev.library_times(ev.devices[0].key, SHAPES[0], "rotating") == {"torch": 0.5}
    finally:
        ev.close()


def test_a_resumed_run_keeps_the_timings_its_kernels_were_compared_with(tmp_path, compile_cache):
    archive = Archive.open(tmp_path / "a.sqlite")
    ev, pool = evaluator(tmp_path, compile_cache, archive=archive)
    try:
        beside_a_kernel(archive, ev.devices[0].key, SHAPES[0], ev.cfg.libraries)
        assert ev.shapes_without_libraries(SHAPES, retime_beside=False) == SHAPES[1:]
        ev.time_libraries_first(SHAPES, retime_beside=False)
        assert [msg["shape"] for _, msg in pool.sent] == [[s.M, s.N, s.K] for s in SHAPES[1:]]
        assert set(ev.library_times(ev.devices[0].key, SHAPES[0], "rotating").values()) == {0.5}
    finally:
        ev.close()


class SlowerLater(RecordingPool):
    """A pool whose library timings read slower (`factors` by shape "MxNxK", on the GPUs in `stepped`, every
    GPU when None) once `after` library requests have gone out: a worker that stepped into a slower launch
    mode after the libraries were timed first. `throttle`: the later timings say the GPU throttled."""

    def __init__(self, inner, factors, after, stepped=None, throttle=False):
        super().__init__(inner)
        self.factors, self.after, self.stepped, self.throttle = factors, after, stepped, throttle

    def call_each(self, request, devices=None):
        replies = super().call_each(request, devices)
        if len(self.sent) <= self.after:
            return replies
        factor = self.factors.get("x".join(map(str, request["shape"])), 1.0)
        for device, reply in replies.items():
            if self.stepped is not None and device not in self.stepped:
                continue
            for lib in reply.get("libraries", []):
                t = lib.get("timing")
                if t:
                    t["median_ms"] *= factor
                    t["samples_ms"] = [x * factor for x in t.get("samples_ms", [])]
                    t["throttled"] = self.throttle
        return replies


def stepping_evaluator(tmp_path, compile_cache, gpus=(), **pool_args):
    return evaluator(tmp_path, compile_cache, gpus=gpus, wrap=lambda inner: SlowerLater(inner, **pool_args))[0]


def test_library_drift_times_the_smallest_shapes_again_and_stores_nothing(tmp_path, compile_cache):
    shapes = [Shape(256, 256, 256), *SHAPES, SHAPES[0]]  # the two of SHAPES have fewer FLOPs; one given twice
    ev, pool = evaluator(tmp_path, compile_cache)
    try:
        ev.time_libraries_first(shapes)
        rows = ev.archive.db.execute("select count(*) from baselines").fetchone()[0]
        first = len(pool.sent)
        drift = ev.library_drift(shapes, most=2)
        assert [msg["shape"] for _, msg in pool.sent[first:]] == [[64, 64, 64], [128, 64, 32]]
        assert drift["shapes"] == ["64x64x64", "128x64x32"] and drift["pairs"] == 2 * len(ev.cfg.libraries)
        assert drift["ratio"] == pytest.approx(1.0, abs=0.02)  # the test double has no launch modes
        assert drift["gpu"] == ev.devices[0].key and drift["restarts"] == 0
        assert ev.archive.db.execute("select count(*) from baselines").fetchone()[0] == rows  # nothing stored
    finally:
        ev.close()


def test_library_drift_measures_a_step_that_came_after_the_libraries_were_timed_first(tmp_path, compile_cache, caplog):
    from evo.search.sweep import _report_drift

    ev = stepping_evaluator(tmp_path, compile_cache, factors={"64x64x64": 1.20, "128x64x32": 1.05}, after=len(SHAPES))
    try:
        ev.time_libraries_first(SHAPES)
        gpu = ev.devices[0].key
        then = ev.library_times(gpu, SHAPES[0], ev.cfg.mode)
        drift = ev.library_drift(SHAPES)
        assert drift["ratio"] == pytest.approx((1.20 * 1.05) ** 0.5, rel=1e-6)  # a geomean, not a mean
        assert drift["worst"][:2] == [gpu, "64x64x64"] and drift["worst"][2] in then
        assert drift["worst"][4] == pytest.approx(1.20 * drift["worst"][3], rel=1e-6)
        assert ev.library_times(gpu, SHAPES[0], ev.cfg.mode) == then  # the stored times stand
    finally:
        ev.close()
    with caplog.at_level("INFO"):
        for ratio in (drift["ratio"], 1.03, 1.029, 0.95):
            _report_drift({**drift, "ratio": ratio}, "")
    said = [(r.levelname, r.getMessage()) for r in caplog.records if "timed again alone" in r.getMessage()]
    assert [level for level, _ in said] == ["WARNING", "WARNING", "INFO", "WARNING"]
    assert "1.122x" in said[0][1] and "slower launch mode" in said[0][1] and "64x64x64, " in said[0][1]
    assert "no change of launch mode" in said[2][1] and "flattered" in said[3][1]


def test_library_drift_names_the_gpu_that_stepped_and_leaves_out_throttled_timings(tmp_path, compile_cache):
    ev = stepping_evaluator(tmp_path, compile_cache, gpus=(0, 1), factors={"64x64x64": 1.2, "128x64x32": 1.2},
                            after=2 * len(SHAPES), stepped={"1"})
    try:
        ev.time_libraries_first(SHAPES)
        drift = ev.library_drift(SHAPES)
        stepped = next(info.key for d, info in zip(ev.pool.devices, ev.devices) if d == "1")
        assert drift["gpu"] == stepped and drift["ratio"] == pytest.approx(1.2, rel=1e-6)  # not diluted by GPU 0
        assert sorted(drift["per_gpu"].values()) == pytest.approx([1.0, 1.2], rel=0.02)
        assert drift["worst"][0] == stepped
    finally:
        ev.close()
    ev = stepping_evaluator(tmp_path / "t", compile_cache, factors={"64x64x64": 1.2}, after=len(SHAPES), throttle=True)
    try:
        ev.time_libraries_first(SHAPES)
        assert ev.library_drift(SHAPES) is None  # every later timing throttled: nothing to compare
    finally:
        ev.close()


def test_a_failing_check_after_the_kernels_leaves_the_sweep_standing(caplog):
    from evo.search.sweep import _check_drift

    class Failing:
        def __init__(self, error):
            self.error = error

        def library_drift(self, shapes):
            raise self.error

    with caplog.at_level("WARNING"):
        assert _check_drift(Failing(RuntimeError("worker gone")), SHAPES, "") is None
        assert _check_drift(Failing(KeyboardInterrupt()), SHAPES, "") is None
    messages = [r.getMessage() for r in caplog.records]
    assert any("worker gone" in m and "results stand" in m for m in messages)
    assert any("stopped while the libraries were timed again" in m for m in messages)
