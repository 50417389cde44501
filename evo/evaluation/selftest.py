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

SMALL, LARGE_K, TINY = Shape(128, 128, 256), Shape(256, 256, 2048), Shape(64, 64, 64)
#: a cheat may be at most this much faster than its honest twin (timing noise, not a real gain)
MAX_CHEAT_GAIN = 1.25


@dataclass(frozen=True)
class Case:
    kernel: str  # file in selftest_kernels/
    shape: Shape
    expected: Status
    honest: str | None = None  # an honest kernel doing the same work: the case must not be faster
    also: tuple[Status, ...] = ()  # other statuses that catch it too (which one comes depends on a draw)


CASES = (
    Case("good.cu", LARGE_K, Status.OK),
    Case("bad_hang.cu", SMALL, Status.TIMEOUT),
    Case("bad_oob_near.cu", SMALL, Status.MEMORY_VIOLATION),
    Case("bad_oob_far.cu", SMALL, Status.FAULT),
    Case("bad_oob_read.cu", SMALL, Status.INCORRECT),
    Case("bad_misaligned.cu", SMALL, Status.FAULT),
    Case("bad_partial.cu", SMALL, Status.INCORRECT),
    Case("bad_writes_input.cu", SMALL, Status.MEMORY_VIOLATION),
    Case("bad_fp16_acc.cu", LARGE_K, Status.INCORRECT),
    Case("bad_some_shapes.cu", SMALL, Status.OK),
    Case("bad_some_shapes.cu", LARGE_K, Status.INCORRECT),
    Case("bad_stateful.cu", SMALL, Status.INCORRECT_AFTER_TIMING),
    Case("bad_smem_too_big.cu", SMALL, Status.LAUNCH_ERROR),
    # timer gaming: output reuse, input caches, launch-count tricks
    Case("bad_reuse_output.cu", SMALL, Status.OK, honest="good.cu"),
    Case("bad_reuse_grid.cu", SMALL, Status.OK, honest="good.cu"),
    Case("bad_input_cache.cu", TINY, Status.OK, honest="good_one_block.cu"),
    Case("bad_launch_count.cu", SMALL, Status.INCORRECT_AFTER_TIMING),
    Case("bad_launch_zeros.cu", SMALL, Status.INCORRECT_AFTER_TIMING),
    Case("bad_rewrites_inputs.cu", LARGE_K, Status.INCORRECT_AFTER_TIMING),
    # its look-ahead follows its own A by pointer arithmetic; A's order is drawn per evaluation, so a
    # leader whose A lies near the end of the sets reads past them: a fault (seen on the H200, session 25)
    Case("bad_look_ahead.cu", SMALL, Status.INCORRECT_AFTER_TIMING, also=(Status.FAULT,)),
    # faults that used to surface as worker_error
    Case("bad_fault_big.cu", SMALL, Status.OK),
    Case("bad_fault_big.cu", LARGE_K, Status.FAULT),
    Case("bad_fault_late.cu", SMALL, Status.FAULT),
)


def kernel_source(name: str) -> str:
    return resources.files("evo.evaluation").joinpath("selftest_kernels", name).read_text()


def run_selftest(ev: Evaluator, *, cases: tuple[Case, ...] = CASES) -> list[dict]:
    """Evaluate each case, then the good kernel; returns one row per evaluation with a verdict.
    A case with an honest twin passes only if it is not more than MAX_CHEAT_GAIN times faster."""
    def load(name: str) -> Candidate:
        return Candidate.make(kernel_source(name), operator="selftest", params={"file": name})

    def evaluate(cand: Candidate, shape: Shape):
        (e,) = list(ev.evaluate([(cand, shape)], measure_libraries=False, race=False))  # every check in full
        return e

    good = load("good.cu")
    rows = []
    for case in cases:
        bad = load(case.kernel)
        if case.expected == Status.TIMEOUT:  # a minute of silence otherwise
            log.info(f"...   {case.kernel:<22} never finishes: waiting for the evaluator's timeout to stop it "
                     f"({ev.cfg.timeout_s:g} s; evaluator.timeout_s=... sets it)")
        for cand, shape, accepted in ((bad, case.shape, (case.expected, *case.also)), (good, SMALL, (Status.OK,))):
            e = evaluate(cand, shape)
            ok, note = e.status in accepted, e.error.splitlines()[0][:150] if e.error else ""
            if cand is bad and case.honest and ok:
                twin = evaluate(load(case.honest), shape)
                gain = twin.time_ms / e.time_ms if twin.time_ms and e.time_ms else None
                ok = gain is not None and gain <= MAX_CHEAT_GAIN
                note = (f"{gain:.2f}x the speed of {case.honest}" if gain else f"{case.honest} not timed") + \
                    (" (modelled: simulated)" if e.backend == "simulated" else "") + \
                    (" (a real gain: the timer was fooled)" if gain and gain > MAX_CHEAT_GAIN else "")
            row = {"kernel": cand.params["file"], "shape": str(shape), "expected": " or ".join(map(str, accepted)),
                   "status": str(e.status), "pass": ok, "error": note}
            rows.append(row)
            level = logging.INFO if row["pass"] else logging.WARNING
            log.log(level, f"{'PASS' if row['pass'] else 'FAIL'}  {row['kernel']:<22} {row['shape']:<13} expected "
                    f"{row['expected']:<24} got {row['status']:<24} {row['error']}")
    return rows
