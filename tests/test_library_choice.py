"""Which cuBLASLt algorithm stands as the "autotuned" baseline (evo.evaluation.library_choice), and the
archive's handling of autotuned rows stored under the old definition."""
from __future__ import annotations

import math

from evo.archive import Archive, records
from evo.core.records import LibraryResult, Timing
from evo.core.shapes import Shape
from evo.evaluation.library_choice import first_correct, screen

GPU, SHAPE = "NVIDIA H200 [test]", Shape(64, 256, 16384)


def test_screening_orders_algorithms_fastest_first_and_records_those_it_could_not_time():
    times = {0: 0.0088, 1: 0.0078, 2: RuntimeError("CUDA error: not capturable\nmore"), 3: math.nan, 4: 0.0078}

    def time_one(i):
        t = times[i]
        if isinstance(t, Exception):
            raise t
        return t
    s = screen(5, time_one)
    assert s.order == [1, 4, 0]  # a tie keeps the heuristic's order
    assert set(s.failed) == {2, 3} and s.failed[2] == "RuntimeError: CUDA error: not capturable"
    assert s.summary(5) == "3 of 5 screened, 2 could not be (RuntimeError: CUDA error: not capturable)"
    assert screen(2, lambda i: 0.001 * (2 - i)).summary(2) == "2 of 2 screened"


def test_screening_that_times_nothing_leaves_no_order():
    s = screen(3, lambda i: -1.0)
    assert s.order == [] and len(s.failed) == 3


def test_the_fastest_algorithm_whose_result_passes_stands():
    reasons = {1: "max relative error 0.4 over tolerance", 4: "", 0: ""}
    pick, rejected = first_correct([1, 4, 0], lambda i: reasons[i])
    assert pick == 4 and rejected == {1: reasons[1]}
    pick, rejected = first_correct([1], lambda i: reasons[i])
    assert pick is None and rejected == {1: reasons[1]}


def _timing(ms: float) -> Timing:
    return Timing(mode="rotating", median_ms=ms, spread=0.0, samples_ms=(ms,), launches=10, clock_mhz=1980.0)


def test_autotuned_rows_of_the_old_definition_count_as_missing_and_are_replaced(tmp_path):
    a = Archive.open(tmp_path / "a.sqlite")
    old = "8 algorithms considered; autotuned (10 iterations); runs tile 96x64, split-K 12"
    for lib, ms, detail in (("torch", 0.00884, ""), ("cublaslt_autotuned", 0.01012, old)):
        records.put_baseline(a, GPU, "gpu", SHAPE, LibraryResult(lib, "rotating", "ok", timing=_timing(ms), detail=detail))
    assert records.library_times(a, GPU, SHAPE, "rotating") == {"torch": 0.00884}
    new = "8 algorithms considered; fastest under evo's timer (2 ms replay each, 8 of 8 screened); heuristic rank 2"
    records.put_baseline(a, GPU, "gpu", SHAPE, LibraryResult("cublaslt_autotuned", "rotating", "ok",
                                                              timing=_timing(0.0078), detail=new))
    assert records.library_times(a, GPU, SHAPE, "rotating") == {"torch": 0.00884, "cublaslt_autotuned": 0.0078}
    assert a.db.execute("select count(*) from baselines").fetchone()[0] == 2  # replaced, not added
    # a row without a detail (the simulated backend's, older archives) stands
    records.put_baseline(a, GPU, "simulated", Shape(64, 64, 64), LibraryResult("cublaslt_autotuned", "rotating", "ok",
                                                                            timing=_timing(0.002)))
    assert records.library_times(a, GPU, Shape(64, 64, 64), "rotating") == {"cublaslt_autotuned": 0.002}
    a.close()
