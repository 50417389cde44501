"""Clocks of library timings, throttled evaluations kept out of the cells (and counted), and
oversized sources stored cut (issue 12)."""
import dataclasses

import pytest

from evo.archive import SCHEMA_VERSION, Archive, records
from evo.archive import queries as q
from evo.archive.elites import AddStatus, elites, offer
from evo.archive.schema import MIGRATIONS
from evo.archive.search_state import load_run, save_generation
from evo.config import EvaluatorConfig
from evo.core.errors import ArchiveError
from evo.core.kernel import Candidate
from evo.core.records import Evaluation, LibraryResult, Status, Timing
from evo.core.shapes import Shape
from evo.evaluation.static_checks import MAX_SOURCE_BYTES, check_source
from evo.families import FAMILIES

GPU = "NVIDIA H200 [test]"
SHAPE = Shape(64, 64, 64)
GOOD = FAMILIES["ampere"].render(FAMILIES["ampere"].default)


def timing(ms: float, *, throttled: bool = False, clock: float = 1980.0) -> Timing:
    return Timing("rotating", ms, 0.01, (ms, ms), 100, clock_mhz=clock, throttled=throttled)


def evaluation(kernel_id: str, ms: float, *, throttled: bool = False, status: Status = Status.OK) -> Evaluation:
    return Evaluation(kernel_id, SHAPE, status, timings=(timing(ms, throttled=throttled, clock=1200.0 if throttled
                                                                 else 1980.0),) if status == Status.OK else (),
                      best_library="torch", best_library_ms=0.010, backend="gpu", gpu=GPU)


def recorded(a: Archive, run: int, e: Evaluation) -> Evaluation:
    """The evaluation as the evaluator hands it on: written, with its row id."""
    return dataclasses.replace(e, id=records.add_evaluation(a, e, run_id=run))


@pytest.fixture
def archive(tmp_path):
    a = Archive.open(tmp_path / "a.sqlite")
    yield a
    a.close()


def test_a_version_1_archive_gains_the_clock_columns_when_opened(tmp_path):
    path = tmp_path / "v1.sqlite"
    old = Archive.open(path, migrations=MIGRATIONS[:1])
    old.insert("baselines", {"gpu": GPU, "backend": "gpu", "M": 64, "N": 64, "K": 64, "mode": "rotating",
                             "library": "torch", "status": "ok", "time_ms": 0.01})
    old.close()
    a = Archive.open(path)
    assert a.schema_version == SCHEMA_VERSION >= 2
    assert {"clock_mhz", "throttled"} <= set(a.db["baselines"].columns_dict)
    assert "cell_offer" in a.db["evaluations"].columns_dict
    assert [r["name"] for r in a.db.query("select name from migrations order by version")][:2] == \
        ["core tables", "library clocks and cell offers"]
    (row,) = a.db.query("select library, time_ms, clock_mhz, throttled from baselines")
    assert row == {"library": "torch", "time_ms": 0.01, "clock_mhz": None, "throttled": None}  # not measured then


def test_a_failed_migration_leaves_version_1_intact(tmp_path):
    path = tmp_path / "v1.sqlite"
    Archive.open(path, migrations=MIGRATIONS[:1]).close()

    def broken(db):
        MIGRATIONS[1][1](db)
        raise RuntimeError("crash after the columns were added (simulated)")

    with pytest.raises(RuntimeError, match="simulated"):
        Archive.open(path, migrations=[MIGRATIONS[0], ("library clocks and cell offers", broken)])
    a = Archive.open(path, migrations=MIGRATIONS[:1])
    assert a.schema_version == 1 and "clock_mhz" not in a.db["baselines"].columns_dict
    a.close()
    assert Archive.open(path).schema_version == SCHEMA_VERSION


def test_library_timings_keep_their_clock_and_throttle_flag(archive):
    for lib, t in (("torch", timing(0.010)), ("cublaslt_autotuned", timing(0.012, throttled=True, clock=1100.0))):
        records.put_baseline(archive, GPU, "gpu", SHAPE, LibraryResult(lib, "rotating", "ok", timing=t))
    records.put_baseline(archive, GPU, "gpu", SHAPE, LibraryResult("cublaslt_heuristic", "rotating", "error",
                                                                    error="no algorithm"))
    rows = {r["library"]: (r["clock_mhz"], r["throttled"]) for r in
            archive.db.query("select library, clock_mhz, throttled from baselines")}
    assert rows == {"torch": (1980.0, 0), "cublaslt_autotuned": (1100.0, 1), "cublaslt_heuristic": (None, None)}


def test_throttled_baselines_name_the_shapes_whose_fastest_library_ran_throttled(archive):
    other, third = Shape(128, 64, 64), Shape(256, 64, 64)

    def put(shape, lib, ms, *, hot=False, mhz=1980.0, gpu=GPU):
        records.put_baseline(archive, gpu, "gpu", shape, LibraryResult(lib, "rotating", "ok",
                                                                        timing=timing(ms, throttled=hot, clock=mhz)))
    put(SHAPE, "torch", 0.010)
    put(other, "torch", 0.020, hot=True, mhz=1550.0)  # the baseline, throttled
    put(other, "cublaslt_heuristic", 0.030)
    put(third, "torch", 0.020)  # the baseline, unthrottled: a slower throttled library does not matter
    put(third, "cublaslt_heuristic", 0.030, hot=True, mhz=1400.0)
    put(SHAPE, "cublaslt_autotuned", 0.005, hot=True, mhz=1400.0, gpu="another GPU")
    assert records.throttled_baselines(archive, GPU, [SHAPE, other, third], "rotating") == {other: ("torch", 1550.0)}
    assert records.throttled_baselines(archive, GPU, [SHAPE, third], "rotating") == {}  # only the shapes asked about
    assert records.throttled_baselines(archive, GPU, [other], "hot") == {}
    put(other, "torch", 0.018)  # timed again, unthrottled: the stored baseline is replaced
    assert records.throttled_baselines(archive, GPU, [other], "rotating") == {}


def test_a_throttled_evaluation_is_kept_out_of_its_cell_and_counted(archive):
    run = archive.start_run(kind="search", config={}, seed=0, backend="gpu", gpu=GPU)
    cell = str(SHAPE)
    first = recorded(archive, run, evaluation("a" * 20, 0.008, throttled=True))
    assert offer(archive, run, cell, first) == AddStatus.NOT_ADDED
    assert elites(archive, run) == []
    second = recorded(archive, run, evaluation("b" * 20, 0.009))
    assert offer(archive, run, cell, second) == AddStatus.NEW
    faster = recorded(archive, run, evaluation("c" * 20, 0.005, throttled=True))  # faster, but throttled
    assert offer(archive, run, cell, faster) == AddStatus.NOT_ADDED
    slower = recorded(archive, run, evaluation("d" * 20, 0.020))
    assert offer(archive, run, cell, slower) == AddStatus.NOT_ADDED
    failed = recorded(archive, run, evaluation("e" * 20, 0, status=Status.INCORRECT))
    assert offer(archive, run, cell, failed) == AddStatus.NOT_ADDED
    better = recorded(archive, run, evaluation("f" * 20, 0.007))
    assert offer(archive, run, cell, better) == AddStatus.IMPROVE_EXISTING
    (elite,) = elites(archive, run)
    assert elite["kernel_id"] == "f" * 20 and elite["time_ms"] == 0.007
    decisions = [(r["kernel_id"][0], r["throttled"], r["cell_offer"]) for r in
                 archive.db.query("select kernel_id, throttled, cell_offer from evaluations order by id")]
    assert decisions == [("a", 1, "throttled"), ("b", 0, "new"), ("c", 1, "throttled"), ("d", 0, "slower"),
                         ("e", 0, None), ("f", 0, "improved")]
    records.put_baseline(archive, GPU, "gpu", SHAPE, LibraryResult("torch", "rotating", "ok",
                                                                    timing=timing(0.01, throttled=True, clock=1300.0)))
    t = q.throttling(archive, run)
    assert t == {"evaluations": 2, "of": 6, "kept_out": 2, "elites": 0, "clock_mhz": pytest.approx(1668.0),
                 "library": 1, "library_throttled": 1, "library_clock_mhz": 1300.0}


def test_throttling_figures_an_old_archive_did_not_record_are_unknown_not_zero(tmp_path):
    a = Archive.open(tmp_path / "v1.sqlite", migrations=MIGRATIONS[:1])  # as read without upgrading
    run = a.start_run(kind="search", config={}, seed=0, backend="gpu", gpu=GPU)
    e = a.insert("evaluations", {"run_id": run, "kernel_id": "k", "M": 64, "N": 64, "K": 64, "status": "ok",
                                 "time_ms": 0.005, "throttled": 1, "clock_mhz": 1100.0, "gpu": GPU, "backend": "gpu"})
    a.insert("elites", {"run_id": run, "cell": "64x64x64", "M": 64, "N": 64, "K": 64, "kernel_id": "k",
                        "evaluation_id": e, "time_ms": 0.005})  # kept as an elite, as evo did before
    a.insert("baselines", {"gpu": GPU, "backend": "gpu", "M": 64, "N": 64, "K": 64, "mode": "rotating",
                           "library": "torch", "status": "ok", "time_ms": 0.01})
    t = q.throttling(a, run)
    assert t["evaluations"] == 1 and t["elites"] == 1 and t["library"] == 1
    assert t["kept_out"] is None and t["library_throttled"] is None and t["library_clock_mhz"] is None


def test_sweep_keeps_throttled_evaluations_out_of_the_cells_and_says_how_many(tmp_path, monkeypatch):
    """The CPU test double never throttles: every timing of shape 64x64x64 is marked throttled here,
    as the worker's clock reader would mark it, before the evaluator records it."""
    from evo.cli.hydra_app import compose
    from evo.evaluation.evaluator import Evaluator
    from evo.search.sweep import run_sweep

    original = Evaluator._from_reply

    def throttled_on_small_shape(self, reply, cand, shape, prepared):
        e = original(self, reply, cand, shape, prepared)
        if shape == SHAPE:
            e = dataclasses.replace(e, timings=tuple(dataclasses.replace(t, throttled=True) for t in e.timings))
        return e

    monkeypatch.setattr(Evaluator, "_from_reply", throttled_on_small_shape)
    path = tmp_path / "s.sqlite"
    c, raw = compose(["evaluator=simulated", "shapes=inline", "shapes.list=[64x64x64,256x256x256]", "sweep.budget=3",
                      "sweep.sample=shortlist", "search.progress=false", f"archive.path={path}"])
    result = run_sweep(c, raw)
    a = Archive.open(path)
    correct_small = a.count("evaluations", "run_id = ? and M = 64 and status = 'ok'", [result["run_id"]])
    assert correct_small >= 1 and result["throttled"] == correct_small
    assert [r["cell"] for r in elites(a, result["run_id"])] == ["256x256x256"]
    assert q.throttling(a, result["run_id"])["kept_out"] == correct_small
    log = (tmp_path / "s.run1.log").read_text()
    assert f"{correct_small} of " in log and "timed on a throttled GPU: kept out of the cells, not re-measured" in log


def test_sweep_names_the_shapes_whose_baseline_ran_throttled(tmp_path, monkeypatch):
    """The libraries' timings of 64x64x64 are marked throttled as the worker's clock reader would mark
    them: the sweep's log names that shape, with its fastest library and clock, and not the other."""
    from evo.cli.hydra_app import compose
    from evo.evaluation.evaluator import Evaluator
    from evo.search.sweep import run_sweep

    original = Evaluator._store_libraries

    def throttled_on_small_shape(self, reply, shape, **kw):
        if shape == SHAPE:
            reply = {**reply, "libraries": [
                {**d, "timing": {**d["timing"], "throttled": True, "clock_mhz": 1500.0}} if d.get("timing") else d
                for d in reply.get("libraries", [])]}
        return original(self, reply, shape, **kw)

    monkeypatch.setattr(Evaluator, "_store_libraries", throttled_on_small_shape)
    path = tmp_path / "s.sqlite"
    c, raw = compose(["evaluator=simulated", "shapes=inline", "shapes.list=[64x64x64,256x256x256]", "sweep.budget=2",
                      "sweep.sample=shortlist", "search.progress=false", f"archive.path={path}"])
    run_sweep(c, raw)
    log = (tmp_path / "s.run1.log").read_text()
    assert "1 of 2 shapes have as their baseline on" in log and "64x64x64 (" in log and "at 1500 MHz)" in log
    assert "256x256x256 (" not in log


def test_report_says_how_many_evaluations_were_throttled(archive, tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("jinja2")
    from evo.report import report

    run = archive.start_run(kind="search", config={"shapes": {"list": [str(SHAPE)]}}, seed=0, backend="gpu", gpu=GPU)
    for kid, ms, hot in (("a" * 20, 0.006, True), ("b" * 20, 0.009, False), ("c" * 20, 0.011, True)):
        archive.insert("kernels", {"id": kid, "source": GOOD, "family": "ampere", "operator": "seed", "run_id": run})
        offer(archive, run, str(SHAPE), recorded(archive, run, evaluation(kid, ms, throttled=hot)))
    for lib, hot in (("torch", False), ("cublaslt_autotuned", True)):
        records.put_baseline(archive, GPU, "gpu", SHAPE, LibraryResult(lib, "rotating", "ok",
                                                                        timing=timing(0.01, throttled=hot)))
    page = " ".join(report(str(archive.path), out=str(tmp_path / "rep")).read_text().split())
    assert ("2 of 3 evaluations were timed on a throttled GPU (a slowdown reason, or an SM clock below 85% of its "
            "maximum); kept out of the cells for it: 2 correct evaluations (not re-measured).") in page
    assert "1 of 2 library timings on this run's GPU were throttled." in page
    assert "cells hold an evaluation timed on a throttled GPU" not in page
    assert "<td><code>bbbbbbbbbbbb</code></td><td>ampere/seed</td> <td>9.00</td>" in page  # the unthrottled one


def big(n_bytes: int) -> str:
    """GOOD padded with a comment (and a multi-byte character) to at least n_bytes."""
    pad = ("// é" + "x" * 76 + "\n") * (n_bytes // 80 + 1)
    return GOOD + pad


def test_an_oversized_source_is_stored_cut_with_its_whole_length(archive):
    whole = Candidate.make(big(1_000_000), operator="llm:rewrite")
    small = Candidate.make(GOOD)
    run = archive.start_run(kind="search", config={}, seed=0, backend="gpu")
    records.add_kernel(archive, whole, run_id=run)
    records.add_kernel(archive, small, run_id=run)
    shown = q.kernel(archive, whole.id[:12])  # still found by the id of its whole source
    stored = shown["source"]
    size = len(whole.source.encode())
    assert len(stored.encode()) < records.SOURCE_LIMIT_BYTES + 200 < size
    assert stored.endswith(f"{records.TRUNCATION_MARKER} {size} bytes, the first {records.SOURCE_LIMIT_BYTES} kept\n")
    assert whole.source.startswith(stored[:stored.index(records.TRUNCATION_MARKER) - 2])  # the start, kept as it was
    assert records.is_truncated(stored) and not records.is_truncated(whole.source[:100_000])
    assert q.kernel(archive, small.id)["source"] == GOOD and not records.is_truncated(GOOD)
    assert q.kernel_source(archive, small.id) == GOOD
    with pytest.raises(ArchiveError, match=f"kernel {whole.id} was rejected for its size .* keeps only the start"):
        q.kernel_source(archive, whole.id)  # never exported as if it were whole


def test_a_source_just_at_the_limit_is_kept_whole(archive):
    source = GOOD + "/" * (records.SOURCE_LIMIT_BYTES - len(GOOD.encode()))
    assert len(source.encode()) == records.SOURCE_LIMIT_BYTES
    assert records.stored_source(source) == source and not records.is_truncated(source)
    assert records.is_truncated(records.stored_source(source + "/"))
    odd = "x" + "é" * (records.SOURCE_LIMIT_BYTES // 2)  # the limit falls inside a two-byte character
    kept = records.stored_source(odd).split("\n")[0]
    assert kept == odd[:records.SOURCE_LIMIT_BYTES // 2] and len(kept.encode()) == records.SOURCE_LIMIT_BYTES - 1


def test_only_sources_the_static_checks_reject_are_cut():
    assert records.SOURCE_LIMIT_BYTES > MAX_SOURCE_BYTES
    cut = records.stored_source(big(2 * records.SOURCE_LIMIT_BYTES))
    assert [r.rule for r in check_source(cut)] == ["size"]  # a cut source can never be compiled


def test_an_oversized_candidate_is_rejected_stored_cut_and_not_resurrected_as_runnable(tmp_path, compile_cache):
    """Through the evaluator (CPU double): rejected for its size, stored cut; what resume reads
    back for it is rejected again, so it can never run."""
    from evo.evaluation.evaluator import Evaluator

    archive = Archive.open(tmp_path / "a.sqlite")
    run = archive.start_run(kind="search", config={}, seed=0, backend="simulated")
    cfg = EvaluatorConfig(backend="simulated", timeout_s=5, cache_dir=str(compile_cache), gpus=[])
    huge = Candidate.make(big(400_000), operator="llm:rewrite")
    ev = Evaluator(cfg, archive=archive, run_id=run).start()
    try:
        (e,) = list(ev.evaluate([(huge, SHAPE)], meta=lambda c: {"generation": 1, "island": 0}))
    finally:
        ev.close()
    assert e.status == Status.REJECTED and "larger than" in e.error
    save_generation(archive, run, 1, state={"search": {"generation": 2}}, islands={}, probabilities={})
    saved = load_run(archive, run, ("search",))
    assert saved is not None and huge.id in saved.candidates
    back = saved.candidates[huge.id]
    assert records.is_truncated(back.source) and len(back.source) < len(huge.source)
    assert [r.rule for r in check_source(back.source)] == ["size"]
