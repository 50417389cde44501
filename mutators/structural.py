"""Structural operators: DEAP mutation and crossover on family genomes, repaired to validity.

A genome is encoded for DEAP as a list of indices into each parameter's allowed values (in the
family's parameter order), so that integer mutation moves to neighbouring tile sizes and stage
counts, and crossover mixes whole parameters.
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from deap import tools

from evo.core.kernel import Candidate
from evo.core.rng import with_rng
from evo.families import FAMILIES, Family


def encode(family: Family, params: dict) -> list[int]:
    return [family.space[k].index(params[k]) for k in family.space]


def decode(family: Family, genes: list[int]) -> dict:
    return {k: family.space[k][max(0, min(g, len(family.space[k]) - 1))] for k, g in zip(family.space, genes)}


def _step(family: Family, params: dict, rng: random.Random, *, genes_to_change: int) -> dict:
    genes = encode(family, params)
    for i in rng.sample(range(len(genes)), genes_to_change):
        genes[i] += rng.choice((-1, 1))
    return decode(family, genes)


@dataclass(frozen=True)
class StructuralOperator:
    """An operator over one or two parents of a family; `arity` parents are selected for it."""
    name: str
    arity: int
    description: str

    def applies(self, parents: list[Candidate], info: dict | None = None) -> bool:
        """Structural operators need a family genome (change_family can start from any kernel)."""
        family = FAMILIES.get(parents[0].family or "")
        return self.name == "change_family" or (family is not None and family.valid(parents[0].params))

    def apply(self, parents: list[Candidate], rng: random.Random, **_context) -> Candidate | None:
        """The child, or None when the operator does not apply to these parents (no family genome)."""
        first = parents[0]
        if not self.applies(parents):
            return None
        family = FAMILIES.get(first.family or "") or FAMILIES["hopper"]
        params = first.params if family.valid(first.params) else family.default
        if self.name == "mutate_one":  # one parameter to a neighbouring value
            child = _step(family, params, rng, genes_to_change=1)
        elif self.name == "mutate_many":  # DEAP uniform-integer mutation over the genome
            genes = encode(family, params)
            (genes,) = with_rng(rng, tools.mutUniformInt, genes, low=[0] * len(genes),
                                 up=[len(v) - 1 for v in family.space.values()], indpb=0.3)
            child = decode(family, list(genes))
        elif self.name == "crossover":
            other = parents[1] if len(parents) > 1 else None
            if other is None or other.family != first.family or not family.valid(other.params):
                child = _step(family, params, rng, genes_to_change=1)
            else:
                a, b = encode(family, params), encode(family, other.params)
                a, b = with_rng(rng, tools.cxUniform, a, b, indpb=0.5)
                child = decode(family, list(a))
        elif self.name == "change_family":  # jump to another family's random configuration
            family = FAMILIES[rng.choice(sorted(n for n in FAMILIES if n != family.name))]
            child = family.random(rng)
        else:
            raise ValueError(f"unknown structural operator {self.name!r}")
        child = family.repair(child, rng)
        return family.candidate(child, operator=self.name, parents=tuple(p.id for p in parents))


OPERATORS: dict[str, StructuralOperator] = {op.name: op for op in (
    StructuralOperator("mutate_one", 1, "move one template parameter to a neighbouring value"),
    StructuralOperator("mutate_many", 1, "redraw each template parameter with probability 0.3 (DEAP mutUniformInt)"),
    StructuralOperator("crossover", 2, "uniform crossover of two parents of one family (DEAP cxUniform)"),
    StructuralOperator("change_family", 1, "a random configuration of another family"),
)}
