"""How well the search's seeds start each shape, scored offline on shortlist sweeps already measured (CPU
only). For every shape of the given sweep archives and every family the search seeds it with, the family's
shortlist (as `evo.search.loop` takes it: its first `--pool` picks) is looked up in the archive by (family,
genes); a strategy chooses `--k` seeds per family from it, and a shape's score is the fastest seed measured
over the shape's best measured kernel (1 = the seeds hold the sweep's best). Strategies:

  prior       the cost model's prior ranks the pool, its best k (what the search does since session 17)
  heuristic   the shortlist's first k
  mixed       the shortlist's first, then the prior's best among the rest

A strategy's pick the sweep did not measure counts as missing (its next choice is not taken in its place);
the table says how often (--complete: only the shapes where none is missing). What this does not show:
what the search finds after its seeds.

    python benchmarks/session29/seed_choice.py SWEEP.sqlite [SWEEP.sqlite ...]
"""
from __future__ import annotations

import argparse
import json
import random
import sqlite3
from collections import defaultdict

from evo.core.kernel import Candidate
from evo.core.shapes import Shape
from evo.core.summary import geomean
from evo.search import cost_prior
from evo.search.cost_model import CostModel, features
from evo.search.loop import SEED_WHERE_SHORTLISTED, TENSOR_CORE_FAMILIES
from evo.search.sweep import plan, sampled_families

NUM_SMS = 132


def measured(path: str) -> dict[Shape, dict[tuple[str, str], float]]:
    """Per shape, the fastest correct time (ms) of every (family, genes) the archive evaluated."""
    times: dict[Shape, dict[tuple[str, str], float]] = defaultdict(dict)
    db = sqlite3.connect(path)
    for m, n, k, family, params, t in db.execute(
            "select e.M, e.N, e.K, k.family, k.params_json, min(e.time_ms) from evaluations e "
            "join kernels k on k.id = e.kernel_id where e.status = 'ok' and k.params_json is not null "
            "group by e.M, e.N, e.K, k.family, k.params_json"):
        times[Shape(m, n, k)][(family, json.dumps(json.loads(params), sort_keys=True))] = t
    return times


def key(c: Candidate) -> tuple[str, str]:
    return c.family or "", json.dumps(c.params, sort_keys=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sweeps", nargs="+")
    ap.add_argument("--pool", type=int, default=12)
    ap.add_argument("--k", type=int, default=2)
    ap.add_argument("--complete", action="store_true", help="only shapes where the sweep measured every strategy's picks")
    args = ap.parse_args()
    model = CostModel(prior=cost_prior.load())
    scores: dict[str, list[float]] = defaultdict(list)
    missing: dict[str, int] = defaultdict(int)
    worst: dict[str, list[tuple[float, Shape]]] = defaultdict(list)
    for path in args.sweeps:
        for shape, times in measured(path).items():
            best = min(times.values())
            chosen: dict[str, list[Candidate]] = defaultdict(list)
            for fam in sampled_families(TENSOR_CORE_FAMILIES, shape) + SEED_WHERE_SHORTLISTED:
                pool = plan([fam], shape, budget=args.pool, sample="shortlist", rng=random.Random(0), num_sms=NUM_SMS)
                if not pool:
                    continue
                predicted = model.predict([features(c, shape, num_sms=NUM_SMS) for c in pool])
                by_prior = [pool[i] for i in sorted(range(len(pool)), key=lambda i: (predicted[i], i))]
                chosen["prior"] += by_prior[:args.k]
                chosen["heuristic"] += pool[:args.k]
                chosen["mixed"] += [pool[0]] + [c for c in by_prior if c is not pool[0]][:args.k - 1]
            if args.complete and any(key(c) not in times for cands in chosen.values() for c in cands):
                continue
            for name, cands in chosen.items():
                found = [times[key(c)] for c in cands if key(c) in times]
                missing[name] += len(cands) - len(found)
                if found:
                    scores[name].append(best / min(found))
                    worst[name].append((best / min(found), shape))
    print(f"{len(scores['prior'])} shapes, {args.k} seeds a family from each shortlist's first {args.pool}")
    print(f"{'strategy':<10} {'geomean':>8} {'>= 0.98':>8} {'< 0.90':>7} {'missing':>8}  worst")
    for name in ("prior", "heuristic", "mixed"):
        s = scores[name]
        low = ", ".join(f"{sh} {r:.2f}" for r, sh in sorted(worst[name], key=lambda x: x[0])[:4])
        print(f"{name:<10} {geomean(s):8.3f} {sum(r >= 0.98 for r in s):8d} {sum(r < 0.9 for r in s):7d} "
              f"{missing[name]:8d}  {low}")


if __name__ == "__main__":
    main()
