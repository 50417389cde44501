"""The operator policy: a softmax over operators per context, learned by REINFORCE.

Logits are kept per context (e.g. "1-10 GFLOP|hopper"); after each use of an operator the
reward (the child's log speedup over its parent, or a penalty for a compile error, a wrong
result or a crash) moves the logits along the gradient of log pi(op), against a running baseline.
A floor on every probability keeps any operator from starving. `uniform` is the ablation.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass, field


@dataclass
class OperatorPolicy:
    operators: list[str]
    kind: str = "reinforce"  # reinforce | uniform
    learning_rate: float = 0.2
    baseline_decay: float = 0.9
    min_probability: float = 0.03
    logits: dict[str, dict[str, float]] = field(default_factory=dict)
    baseline: dict[str, float] = field(default_factory=dict)
    uses: dict[str, dict[str, int]] = field(default_factory=dict)

    def __post_init__(self):
        if not self.operators:
            raise ValueError("the policy needs at least one operator")
        self.min_probability = min(self.min_probability, 1.0 / len(self.operators))

    def probabilities(self, context: str) -> dict[str, float]:
        if self.kind == "uniform":
            return {op: 1.0 / len(self.operators) for op in self.operators}
        z = self.logits.get(context, {})
        values = [z.get(op, 0.0) for op in self.operators]
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
        base = self.baseline.get(context, 0.0)
        advantage = reward - base
        probs = self.probabilities(context)
        z = self.logits.setdefault(context, {o: 0.0 for o in self.operators})
        for o in self.operators:
            grad = (1.0 if o == op else 0.0) - probs[o]
            z[o] = z.get(o, 0.0) + self.learning_rate * advantage * grad
        self.baseline[context] = self.baseline_decay * base + (1 - self.baseline_decay) * reward

    def state(self) -> dict:
        return {"kind": self.kind, "operators": self.operators, "logits": self.logits, "baseline": self.baseline,
                "uses": self.uses}

    def load(self, state: dict) -> None:
        self.logits = {c: dict(v) for c, v in state.get("logits", {}).items()}
        self.baseline = dict(state.get("baseline", {}))
        self.uses = {c: dict(v) for c, v in state.get("uses", {}).items()}

    def snapshot(self) -> dict[str, dict[str, float]]:
        """Current probabilities for every context seen (for reports)."""
        contexts = set(self.logits) | set(self.uses)
        return {c: self.probabilities(c) for c in sorted(contexts)}
