"""The operator policy: a softmax over operators, learned by REINFORCE, shared across contexts.

A context is "bucket|family" (the target shape's FLOP bucket, the parent's family). The logit of
operator `op` in a context is a sum of three learned terms,

    z(op | bucket, family) = shared[op] + by_bucket[bucket][op] + by_family[family][op]

so what one context learns (an operator that fails everywhere, one that pays everywhere) moves
every other context through `shared`, while the offsets keep what is particular to a bucket or a
family. After each use of an operator, the reward (the child's log speedup over its parent, or a
penalty for a compile error, a wrong result or a crash) moves all three terms along the gradient
of log pi(op | context), against a running baseline per context (started from the shared
baseline). A floor on every probability keeps any operator from starving. `uniform` is the ablation.
The state is plain JSON, saved in the archive with every generation (resume restores it exactly).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

SHARED = "*"


def split_context(context: str) -> tuple[str, str]:
    bucket, _, family = context.partition("|")
    return bucket, family


@dataclass
class OperatorPolicy:
    operators: list[str]
    kind: str = "reinforce"  # reinforce | uniform
    learning_rate: float = 0.2
    baseline_decay: float = 0.9
    min_probability: float = 0.03
    shared: dict[str, float] = field(default_factory=dict)
    by_bucket: dict[str, dict[str, float]] = field(default_factory=dict)
    by_family: dict[str, dict[str, float]] = field(default_factory=dict)
    baseline: dict[str, float] = field(default_factory=dict)
    uses: dict[str, dict[str, int]] = field(default_factory=dict)

    def __post_init__(self):
        if not self.operators:
            raise ValueError("the policy needs at least one operator")
        self.min_probability = min(self.min_probability, 1.0 / len(self.operators))

    def logit(self, context: str, op: str) -> float:
        bucket, family = split_context(context)
        return (self.shared.get(op, 0.0) + self.by_bucket.get(bucket, {}).get(op, 0.0)
                + self.by_family.get(family, {}).get(op, 0.0))

    def probabilities(self, context: str) -> dict[str, float]:
        if self.kind == "uniform":
            return {op: 1.0 / len(self.operators) for op in self.operators}
        values = [self.logit(context, op) for op in self.operators]
        top = max(values)
        exps = [math.exp(v - top) for v in values]
        total = sum(exps)
        floor = self.min_probability
        scale = 1.0 - floor * len(self.operators)
        return {op: floor + scale * e / total for op, e in zip(self.operators, exps)}

    def choose(self, context: str, rng: random.Random, allowed: list[str] | None = None) -> str:
        probs = self.probabilities(context)
        ops = [op for op in self.operators if allowed is None or op in allowed]
        weights = [probs[op] for op in ops]
        return rng.choices(ops, weights=weights)[0]

    def update(self, context: str, op: str, reward: float) -> None:
        self.uses.setdefault(context, {}).setdefault(op, 0)
        self.uses[context][op] += 1
        if self.kind == "uniform":
            return
        base = self.baseline.get(context, self.baseline.get(SHARED, 0.0))
        advantage = reward - base
        probs = self.probabilities(context)
        bucket, family = split_context(context)
        terms = (self.shared, self.by_bucket.setdefault(bucket, {}), self.by_family.setdefault(family, {}))
        for o in self.operators:
            step = self.learning_rate * advantage * ((1.0 if o == op else 0.0) - probs[o])
            for z in terms:
                z[o] = z.get(o, 0.0) + step
        self.baseline[context] = self.baseline_decay * base + (1 - self.baseline_decay) * reward
        shared = self.baseline.get(SHARED, 0.0)
        self.baseline[SHARED] = self.baseline_decay * shared + (1 - self.baseline_decay) * reward

    def state(self) -> dict:
        return {"kind": self.kind, "operators": self.operators, "shared": self.shared, "by_bucket": self.by_bucket,
                "by_family": self.by_family, "baseline": self.baseline, "uses": self.uses}

    def load(self, state: dict) -> None:
        """Restore a saved state. A state saved by the older per-context tables ("logits") keeps its
        use counts and starts the learned terms afresh."""
        self.shared = dict(state.get("shared", {}))
        self.by_bucket = {b: dict(v) for b, v in state.get("by_bucket", {}).items()}
        self.by_family = {f: dict(v) for f, v in state.get("by_family", {}).items()}
        self.baseline = dict(state.get("baseline", {})) if "shared" in state else {}
        self.uses = {c: dict(v) for c, v in state.get("uses", {}).items()}

    def snapshot(self) -> dict[str, dict[str, float]]:
        """Current probabilities for every context seen (for reports)."""
        return {c: self.probabilities(c) for c in sorted(self.uses)}
