"""Rewards for the operator policy: what one use of an operator earned."""
from __future__ import annotations

import math

from evo.config import MutatorConfig
from evo.core.records import Status

CLIP = 1.0
#: a gain below this is within timing noise: no credit (else operators that change nothing, such as a
#: compile option without effect, earn half their uses by noise while real changes mostly lose)
NOISE = 0.01


def reward(status: Status | None, child_speedup: float | None, parent_speedup: float | None,
           cfg: MutatorConfig, *, duplicate: bool = False) -> float:
    """The child's gain over its reference (its parent's speedup, or the shape's best), log(child /
    reference), when it is beyond the timing noise (clipped to 1); else the cost of the evaluation it
    spent (`mutator.evaluation_cost`): the policy is credited for improvements, not for children that
    are merely less bad than the average child. Penalties for failures; a duplicate (no evaluation
    spent) costs less than a wasted evaluation, so that an operator that never repeats a kernel is
    not favoured over one that sometimes does and sometimes improves (on the H200 a zero reward for
    wasted evaluations and -0.1 for duplicates made REINFORCE spend a third of a search on random
    jumps to other families, which set one new best in 236 uses)."""
    if duplicate:
        return cfg.penalty_duplicate
    if status is None or status in (Status.REJECTED, Status.COMPILE_ERROR, Status.COMPILE_TIMEOUT):
        return cfg.penalty_compile_error
    if status in (Status.INCORRECT, Status.INCORRECT_AFTER_TIMING, Status.MEMORY_VIOLATION):
        return cfg.penalty_incorrect
    if status in (Status.FAULT, Status.TIMEOUT, Status.LAUNCH_ERROR):
        return cfg.penalty_crash
    if status in (Status.UNSUPPORTED, Status.BAD_LAUNCH):
        return -0.5
    if status == Status.WORKER_ERROR or not child_speedup:
        return 0.0
    base = parent_speedup if parent_speedup and parent_speedup > 0 else 1.0
    gain = math.log(child_speedup / base)
    return min(CLIP, gain) if gain > NOISE else -cfg.evaluation_cost


def reward_without_child(failure_kind: str, cfg: MutatorConfig) -> float | None:
    """What a use of an operator that gave no child to evaluate earned (None: no update at all).
    A structural operator with nothing to propose never gets here: another one makes the plan's
    child (evo.search.loop, `_make_structural`).
    - "unavailable", "refused", "budget": the API's trouble, not the operator's: no update;
    - "unsupported": a child whose declaration refuses its shape: -0.5;
    - anything else (an LLM answer without a usable edit, an operator's exception): a compile error."""
    if failure_kind in ("unavailable", "refused", "budget"):
        return None
    if failure_kind == "unsupported":
        return reward(Status.UNSUPPORTED, None, None, cfg)
    return cfg.penalty_compile_error
