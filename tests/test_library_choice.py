"""Which cuBLASLt algorithm stands as the "autotuned" baseline (evo.evaluation.library_choice)."""
from __future__ import annotations

import math

import pytest

from evo.evaluation.library_choice import first_correct, screen


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


def test_an_algorithm_whose_check_raises_is_rejected_and_a_programming_error_propagates():
    def check(i):
        if i == 1:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return ""
    pick, rejected = first_correct([1, 0], check)
    assert pick == 0 and rejected == {1: "its check failed: RuntimeError: CUDA error: an illegal memory access was "
                                          "encountered"}
    with pytest.raises(TypeError):
        first_correct([0], lambda i: len(None))  # a bug of ours, not a slow or broken algorithm
    with pytest.raises(KeyError):
        screen(2, lambda i: {}[i])
