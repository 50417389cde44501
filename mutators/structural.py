"""Structural operators: mutation and crossover on family genomes, repaired to validity; a
compile-options operator; and `revert_gene`, the repair of a failed child without an LLM.

A genome is encoded as a list of indices into each parameter's allowed values (in the family's
parameter order), so that integer mutation moves to neighbouring tile sizes and stage counts, and
crossover mixes whole parameters. The variation functions are three small functions of ours
(`tournament` in evo.islands, `mutate_uniform_int` and `crossover_uniform` here), in the manner of
DEAP's selTournament, mutUniformInt and cxUniform, drawing only from the search's own generator
(DEAP's draw from the process-global `random`, which LLM threads could disturb).

Compile options (`evo.core.compile_options`) are inherited: a child made from a parent with
options keeps them, so they behave as extra genes.
"""
from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from evo.core.compile_options import OPTIONS, OptionError, can_set_minblocks, options_of, options_or_none, with_options
from evo.core.errors import EvoError
from evo.core.kernel import Candidate
from evo.families import FAMILIES, Family

# the search's cost model as the operators see it: predicted log time of each (candidate, shape),
# or None when it cannot rank yet
Predict = Callable[[list[tuple[Candidate, object]]], "list[float] | None"]
OPEN_POOL = 12  # untried shortlist picks the cost model chooses among (it was fit on picks of that depth)


def encode(family: Family, params: dict) -> list[int]:
    params = family.complete(params)
    return [family.space[k].index(params[k]) for k in family.space]


def decode(family: Family, genes: list[int]) -> dict:
    return {k: family.space[k][max(0, min(g, len(family.space[k]) - 1))] for k, g in zip(family.space, genes)}


def mutate_uniform_int(genes: list[int], rng: random.Random, *, up: list[int], indpb: float) -> list[int]:
    """Each gene redrawn uniformly in [0, up[i]] with probability indpb."""
    return [rng.randint(0, hi) if rng.random() < indpb else g for g, hi in zip(genes, up)]


def crossover_uniform(a: list[int], b: list[int], rng: random.Random, *, indpb: float) -> list[int]:
    """The child of a and b taking each gene from b with probability indpb."""
    return [y if rng.random() < indpb else x for x, y in zip(a, b)]


def carry_options(parent: Candidate, child: Candidate, changed: dict | None = None) -> Candidate:
    """The child with the parent's compile options (those its source can take), and `changed` on top
    (an option's new value, or None where it is dropped)."""
    opts = options_or_none(parent.source) or {}
    for k, v in (changed or {}).items():
        if v is None:
            opts.pop(k, None)
        else:
            opts[k] = v
    if not opts:
        return child
    if "minblocks" in opts and not can_set_minblocks(child.source):
        opts.pop("minblocks")
    return Candidate.make(with_options(child.source, opts), family=child.family, params=child.params,
                          operator=child.operator, parents=child.parents)


def _step(family: Family, params: dict, rng: random.Random, *, genes_to_change: int) -> dict:
    """`genes_to_change` parameters, each to a neighbouring value among those the rest of the genome
    allows (`Family.values_for`: hopper's BM is 64, 128 or 256 for plain tiles and any multiple of 8 for
    transposed ones, so a plain 128 steps to 64 or 256, not to 120 or 136). Repair follows."""
    params = dict(family.complete(params))
    for key in rng.sample(list(family.space), genes_to_change):
        values = family.values_for(key, params)
        here = values.index(params[key]) if params[key] in values else 0
        # a neighbour that exists: at either end of the values (a 0/1 gene is always at one) the step
        # goes inwards, where a random direction clamped back onto the same value half the time
        sides = [i for i in (here - 1, here + 1) if 0 <= i < len(values)] or [here]
        params[key] = values[rng.choice(sides)]
    return params


@dataclass(frozen=True)
class StructuralOperator:
    """An operator over one or two parents of a family; `arity` parents are selected for it."""
    name: str
    arity: int
    description: str

    @property
    def repairs(self) -> bool:
        """Whether it repairs a failed child (used only on the repair queue's entries)."""
        return self.name == "revert_gene"

    def applies(self, parents: list[Candidate], info: dict | None = None) -> bool:
        """Structural operators need a family genome (change_family can start from any kernel,
        compile_options from any kernel with a valid options line)."""
        family = FAMILIES.get(parents[0].family or "")
        if self.name == "change_family":
            return True
        if self.name == "compile_options":
            return bool(_levers(parents[0].source))
        if self.name == "revert_gene":
            return len(parents) > 1 and bool(_differences(parents[0], parents[1]))
        return family is not None and family.valid(parents[0].params)

    def apply(self, parents: list[Candidate], rng: random.Random, **context) -> Candidate | None:
        """The child, or None when the operator does not apply to these parents (no family genome)."""
        first = parents[0]
        if not self.applies(parents):
            return None
        if self.name == "compile_options":
            return _change_option(first, rng)
        if self.name == "revert_gene":
            return _revert_gene(first, parents[1], rng)
        if self.name == "next_pick":
            return _next_pick(first, context.get("shape"), context.get("tried"), context.get("num_sms", 132),
                              context.get("predict"))
        if self.name == "replay_change":
            return _replay_change(first, context.get("finds") or [], rng)
        family = FAMILIES.get(first.family or "") or FAMILIES["hopper"]
        params = first.params if family.valid(first.params) else family.default
        if self.name == "mutate_one":  # one parameter to a neighbouring value
            child = _step(family, params, rng, genes_to_change=1)
        elif self.name == "mutate_many":  # uniform-integer mutation over the genome
            genes = mutate_uniform_int(encode(family, params), rng,
                                       up=[len(v) - 1 for v in family.space.values()], indpb=0.3)
            child = decode(family, genes)
        elif self.name == "crossover":
            other = parents[1] if len(parents) > 1 else None
            if other is None or other.family != first.family or not family.valid(other.params):
                child = _step(family, params, rng, genes_to_change=1)
            else:
                child = decode(family, crossover_uniform(encode(family, params), encode(family, other.params),
                                                         rng, indpb=0.5))
        elif self.name == "change_family":  # jump to another family: its best untried pick, else a random one
            family, child = _other_family(family.name, context.get("shape"), context.get("tried", ()), rng,
                                          context.get("num_sms", 132), context.get("predict"))
        else:
            raise ValueError(f"unknown structural operator {self.name!r}")
        # a single step keeps its new value through the repair where that costs at most one more gene,
        # or the repair mostly undoes it: half of mutate_one's children were their parent again
        before = family.complete(params)
        stepped = tuple(k for k in child if child[k] != before.get(k)) if self.name == "mutate_one" else ()
        child = family.repair(child, rng, keep=stepped)
        made = family.candidate(child, operator=self.name, parents=tuple(p.id for p in parents))
        return made if self.name == "change_family" else carry_options(first, made)


def _next_pick(parent: Candidate, shape, tried=None, num_sms: int = 132, predict: Predict | None = None
               ) -> Candidate | None:
    """The best-ranked pick of the parent's family shortlist for the shape that is not in `tried`
    (the configurations already measured or made on that shape, as `config_key`s) and supports the
    shape, else (no `tried` given) the pick ranked after the parent's configuration: the shortlist
    walked where the search finds it pays, never re-proposing a pick the shape has already had.
    With `predict` (the search's cost model, once it can rank): the predicted fastest of the first
    OPEN_POOL such picks instead of the first."""
    family = FAMILIES[parent.family or ""]
    if shape is None:
        return None
    picks = family.suggest(shape.M, shape.N, shape.K, num_sms=num_sms, limit=64)
    params = genes_of(parent)
    rank = picks.index(params) + 1 if params in picks else 0
    pick = (_first_open(family, picks, shape, tried, num_sms, predict) if tried is not None else
            picks[rank] if rank < len(picks) else None)
    if pick is None:
        return None
    made = family.candidate(pick, operator="next_pick", parents=(parent.id,))
    return carry_options(parent, made)


def _first_open(family: Family, picks: list[dict], shape, tried, num_sms: int, predict: Predict | None = None
                ) -> dict | None:
    """The first of `picks` not in `tried` whose kernel supports the shape (a family's shortlist can
    end with its default configuration, which may not: proposing it would only be refused again);
    with `predict`, the predicted fastest of the first OPEN_POOL of them."""
    found: list[tuple[dict, Candidate]] = []
    for p in picks:
        if config_key(family.name, p) in tried:
            continue
        try:
            cand = family.candidate(p)
            if cand.declaration.supports(shape, num_sms=num_sms):
                found.append((p, cand))
        except EvoError:  # a declaration that cannot be read: not a pick to propose
            continue
        if predict is None or len(found) >= OPEN_POOL:
            break
    if not found:
        return None
    predicted = predict([(c, shape) for _, c in found]) if predict is not None else None
    if predicted is None:
        return found[0][0]
    return found[min(range(len(found)), key=lambda i: (predicted[i], i))][0]


def _other_family(current: str, shape, tried, rng: random.Random, num_sms: int = 132,
                  predict: Predict | None = None) -> tuple[Family, dict]:
    """Another family and a configuration of it. With a target shape: a tensor-core family whose
    shortlist covers the shape, and its best-ranked supported pick the shape has not had (on the
    H200 the random configurations this operator used to make averaged 0.2x the library, a quarter
    of a search's budget spent where a sweep would not go). Without a shape, or when no such pick
    is left: a random configuration of any other family, as before."""
    if shape is not None:
        options = []
        for name in sorted(n for n in FAMILIES if n not in (current, "simt")):
            pick = _first_open(FAMILIES[name], FAMILIES[name].suggest(shape.M, shape.N, shape.K, num_sms=num_sms, limit=64),
                               shape, tried, num_sms, predict)
            if pick is not None:
                options.append((FAMILIES[name], pick))
        if options:
            return options[rng.randrange(len(options))]
    family = FAMILIES[rng.choice(sorted(n for n in FAMILIES if n != current))]
    return family, family.random(rng)


def _completed(family: str | None, params: dict) -> dict:
    """`params` with every gene the family gained since they were archived, at the value that renders
    them (Family.complete): an old kernel compares equal to its new rendering."""
    fam = FAMILIES.get(family or "")
    return fam.complete(params) if fam else params


def genes_of(cand: Candidate) -> dict:
    """A candidate's parameters, completed as above."""
    return _completed(cand.family, cand.params)


def config_key(family: str | None, params: dict | None) -> tuple:
    """A configuration's identity whatever its compile options: (family, sorted parameters, with
    genes added later at their old value)."""
    return (family, tuple(sorted(_completed(family, params or {}).items())))


def _levers(source: str) -> list[str]:
    """The compile options this source can change: a register cap through `minblocks` where the entry
    point has a one-argument __launch_bounds__, `maxrregcount` where it has none (nvcc ignores the
    flag for a kernel with launch bounds), the cache and optimization flags always."""
    try:
        current = options_of(source)
    except OptionError:
        return []
    out = [k for k in OPTIONS if k not in ("minblocks", "maxrregcount")]
    if _can_take_option(source, current, "minblocks"):
        out.append("minblocks")
    if "__launch_bounds__" not in source:
        out.append("maxrregcount")
    return out


def _change_option(parent: Candidate, rng: random.Random) -> Candidate:
    """One option set to another allowed value, or removed."""
    opts = options_of(parent.source)
    lever = rng.choice(_levers(parent.source))
    choices = [v for v in OPTIONS[lever] if v != opts.get(lever)] + ([None] if lever in opts else [])
    value = rng.choice(choices)
    if value is None:
        opts.pop(lever)
    else:
        opts[lever] = value
    return Candidate.make(with_options(parent.source, opts), family=parent.family, params=parent.params,
                          operator="compile_options", parents=(parent.id,))


def _differences(failed: Candidate, parent: Candidate) -> list[str]:
    """The genes (parameters, and "options" for the compile options) where a failed child differs
    from its parent of the same family."""
    family = FAMILIES.get(failed.family or "")
    if family is None or failed.family != parent.family or not family.valid(parent.params):
        return []
    failed_genes, parent_genes = genes_of(failed), genes_of(parent)
    out = [k for k in family.space if failed_genes.get(k) != parent_genes.get(k)]
    if options_or_none(failed.source) != options_or_none(parent.source):
        out.append("options")
    return out


def _revert_gene(failed: Candidate, parent: Candidate, rng: random.Random) -> Candidate:
    """The failed child with one differing gene reverted to its parent's value (repaired to validity)."""
    family = FAMILIES[failed.family or ""]
    gene = rng.choice(_differences(failed, parent))
    failed_genes, parent_genes = genes_of(failed), genes_of(parent)
    params = failed_genes if family.valid(failed_genes) else dict(parent_genes)
    options_from = parent if gene == "options" else failed
    if gene != "options":
        params = family.repair(dict(params, **{gene: parent_genes[gene]}), rng)
    made = family.candidate(params, operator="revert_gene", parents=(failed.id, parent.id))
    return carry_options(options_from, made)


MAX_FINDS = 32  # the changes replay_change draws from: the most recent new bests
#: a kernel this much faster than the best it is compared with is a find (beyond timing noise): a search's
#: child against its shape's best (replay_change's finds), an `evo compare` arm against the shortlist
FIND_GAIN = 1.01


def gene_change(parent: Candidate, child: Candidate) -> dict | None:
    """What a child changed of its parent, as a change another kernel of the family can take:
    {"family", "params": {gene: new value}, "options": {option: new value, or None where dropped}};
    None where there is nothing comparable (another family, no genome, nothing changed)."""
    family = FAMILIES.get(child.family or "")
    if family is None or child.family != parent.family or not child.params or not parent.params:
        return None
    before, after = family.complete(parent.params), family.complete(child.params)
    params = {k: v for k, v in after.items() if before.get(k) != v}
    old, new = options_or_none(parent.source) or {}, options_or_none(child.source) or {}
    options = {k: new.get(k) for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)}
    if not params and not options:
        return None
    return {"family": family.name, "params": params, "options": options}


def remember(finds: list[dict], change: dict) -> list[dict]:
    """finds with `change` as the most recent (once), at most MAX_FINDS."""
    return ([f for f in finds if f != change] + [change])[-MAX_FINDS:]


def _can_take_option(source: str, options: dict, name: str) -> bool:
    """Whether an option can be set on this source: `minblocks` needs a one-argument
    __launch_bounds__, or one that an earlier minblocks made two-argument."""
    return name != "minblocks" or "minblocks" in options or can_set_minblocks(source)


def _takes(parent: Candidate, here: dict, change: dict) -> bool:
    opts = options_or_none(parent.source) or {}
    return (any(here.get(k) != v for k, v in change["params"].items())
            or any(opts.get(k) != v and _can_take_option(parent.source, opts, k) for k, v in change["options"].items()))


def _replay_change(parent: Candidate, finds: list[dict], rng: random.Random) -> Candidate | None:
    """A change that set a new best on some shape (`finds`, recorded by the search: its genes and
    compile options), applied to this parent of the same family: a find on one shape is a hypothesis
    for the others (6-7 stages on split-K picks, a transposed tile). None where no find applies."""
    family = FAMILIES.get(parent.family or "")
    if family is None or not family.valid(parent.params):
        return None
    here = family.complete(parent.params)
    eligible = [f for f in finds if f["family"] == family.name and _takes(parent, here, f)]
    if not eligible:
        return None
    change = rng.choice(eligible)
    params = family.repair(dict(here, **change["params"]), rng, keep=tuple(change["params"]))
    if change["params"] and not any(params.get(k) == v for k, v in change["params"].items()):
        return None  # the repair undid the change: what is left is not the find
    child = carry_options(parent, family.candidate(params, operator="replay_change", parents=(parent.id,)),
                          change["options"])
    return None if child.id == parent.id else child


OPERATORS: dict[str, StructuralOperator] = {op.name: op for op in (
    StructuralOperator("mutate_one", 1, "move one template parameter to a neighbouring value"),
    StructuralOperator("mutate_many", 1, "redraw each template parameter with probability 0.3"),
    StructuralOperator("crossover", 2, "uniform crossover of two parents of one family"),
    StructuralOperator("change_family", 1, "another family's best pick the shape has not had (else a random one)"),
    StructuralOperator("compile_options", 1, "change one compile option: register cap (launch-bounds min blocks "
                       "or -maxrregcount), L1 caching of loads, ptxas optimizations"),
    StructuralOperator("revert_gene", 2, "repair: revert one gene of a failed child to its parent's value"),
    StructuralOperator("next_pick", 1, "the best-ranked pick of the family's shortlist the target shape has not had"),
    StructuralOperator("replay_change", 1, "a change (genes, compile options) that set a new best on some shape, "
                       "applied to this parent"),
)}
