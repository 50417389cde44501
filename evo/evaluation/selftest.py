"""`evo selftest`: run deliberately bad kernels through the evaluator and check each is caught.

Each bad kernel is followed by a known-good kernel, which must still evaluate normally: a
failure is contained and disturbs nothing after it.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from importlib import resources

from evo.core.kernel import Candidate
from evo.core.records import Status
from evo.core.shapes import Shape
from evo.evaluation.evaluator import Evaluator

log = logging.getLogger(__name__)

SMALL, LARGE_K = Shape(128, 128, 256), Shape(256, 256, 2048)


@dataclass(frozen=True)
class Case:
    kernel: str  # file in selftest_kernels/
    shape: Shape
    expected: Status


CASES = (
    Case("good.cu", LARGE_K, Status.OK),
    Case("bad_hang.cu", SMALL, Status.TIMEOUT),
    Case("bad_oob_near.cu", SMALL, Status.MEMORY_VIOLATION),
    Case("bad_oob_far.cu", SMALL, Status.FAULT),
    Case("bad_misaligned.cu", SMALL, Status.FAULT),
    Case("bad_partial.cu", SMALL, Status.INCORRECT),
    Case("bad_writes_input.cu", SMALL, Status.MEMORY_VIOLATION),
    Case("bad_fp16_acc.cu", LARGE_K, Status.INCORRECT),
    Case("bad_some_shapes.cu", SMALL, Status.OK),
    Case("bad_some_shapes.cu", LARGE_K, Status.INCORRECT),
    Case("bad_stateful.cu", SMALL, Status.INCORRECT_AFTER_TIMING),
    Case("bad_smem_too_big.cu", SMALL, Status.LAUNCH_ERROR),
)


def kernel_source(name: str) -> str:
    return resources.files("evo.evaluation").joinpath("selftest_kernels", name).read_text()


def run_selftest(ev: Evaluator, *, cases: tuple[Case, ...] = CASES) -> list[dict]:
    """Evaluate each case, then the good kernel; returns one row per evaluation with a verdict."""
    good = Candidate.make(kernel_source("good.cu"), operator="selftest", params={"file": "good.cu"})
    rows = []
    for case in cases:
        bad = Candidate.make(kernel_source(case.kernel), operator="selftest", params={"file": case.kernel})
        for cand, shape, expected in ((bad, case.shape, case.expected), (good, SMALL, Status.OK)):
            (e,) = list(ev.evaluate([(cand, shape)], measure_libraries=False))
            row = {"kernel": cand.params["file"], "shape": str(shape), "expected": str(expected),
                   "status": str(e.status), "pass": e.status == expected,
                   "error": e.error.splitlines()[0][:150] if e.error else ""}
            rows.append(row)
            level = logging.INFO if row["pass"] else logging.WARNING
            log.log(level, f"{'PASS' if row['pass'] else 'FAIL'}  {row['kernel']:<22} {row['shape']:<13} expected "
                f"{row['expected']:<24} got {row['status']:<24} {row['error']}")
    return rows
