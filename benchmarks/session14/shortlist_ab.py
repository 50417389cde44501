"""A shortlist rule for pipelines deeper than 7 stages, measured as a shortlist (NEXT.md item 2): on
every shape of one shape set, the shortlist sweep as main makes it (24 picks) and the same sweep with
each hopper pick whose stages are at most 20 KB and whose work items run at least 64 k-steps followed
by its variant with the deepest pipeline that fits (up to 16; run_c's pairs: 1.066x over 71 such picks,
11 slower by 2%), cut to the same 24 picks. The union is evaluated side by side in one evaluator run,
libraries in the same run, no racing; each shortlist's per-shape best is read from those same
measurements. Prints both sweeps' geomean against the best library by FLOP bucket, and the shapes
where they differ; writes the per-shape figures as JSON. The rule has been in `hopper._suggest` since
benchmarks/session15 (where this ran on both sets), so on main the two lists are now the same.

With `--rule tma_store` (benchmarks/session16/NEXT.md) it measures the sixteenth session's rule the same
way: main's shortlist against main's with every hopper pick's TMA_STORE reset to 0 (the list without
`hopper._tma_store_where_it_pays`); the columns then read "main" and "no_tma".

    python benchmarks/session14/shortlist_ab.py --set llm_layers --out /tmp/sab
    python benchmarks/session14/shortlist_ab.py --set llm_layers --out /tmp/sab --backend simulated   # CPU dry run
    python benchmarks/session14/shortlist_ab.py --set grid125 --part 0/2 --out /tmp/sab0   # half the shapes
    python benchmarks/session14/shortlist_ab.py --rule tma_store --set grid125 --differing --out /tmp/tab
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
from collections import defaultdict
from pathlib import Path

from evo.core.summary import geomean
from evo.families import FAMILIES
from evo.families.hopper import _deep_beside
from evo.search.sweep import plan

sys.path.insert(0, str(Path(__file__).resolve().parent))
from deep_ab import shapes_of, side_by_side  # noqa: E402

DEEPEST = 16


def deep_variant(p: dict, K: int) -> dict | None:
    """p with the deepest pipeline that fits up to 16, where p's stages are small and its items long (the
    rule as measured here, since shipped as hopper._deep_beside)."""
    return _deep_beside(p, -(-K // 64), DEEPEST)


def with_deep_variants(suggest):
    """A hopper `_suggest` that follows each qualifying pick with its deep variant."""
    def wrapped(M, N, K, num_sms):
        out = []
        for p in suggest(M, N, K, num_sms):
            out.append(p)
            q = deep_variant(p, K)
            if q is not None:
                out.append(q)
        return out
    return wrapped


def without_tma_store(suggest):
    """A hopper `_suggest` whose picks store C with every thread (TMA_STORE=0), duplicates dropped."""
    def wrapped(M, N, K, num_sms):
        out = []
        for p in suggest(M, N, K, num_sms):
            q = dict(p, TMA_STORE=0)
            if q not in out:
                out.append(q)
        return out
    return wrapped


RULES = {"deep": (with_deep_variants, "main", "deep"), "tma_store": (without_tma_store, "main", "no_tma")}


def shortlists(shape, budget: int, num_sms: int = 132, rule: str = "deep") -> tuple[list, list]:
    """(main's shortlist, the list with `rule`'s wrapper around hopper's suggestions) for one shape."""
    families = sorted(FAMILIES)
    rng = random.Random(0)
    old = plan(families, shape, budget=budget, sample="shortlist", rng=rng, num_sms=num_sms)
    hopper = FAMILIES["hopper"]
    FAMILIES["hopper"] = dataclasses.replace(hopper, _suggest=RULES[rule][0](hopper._suggest))
    try:
        new = plan(families, shape, budget=budget, sample="shortlist", rng=rng, num_sms=num_sms)
    finally:
        FAMILIES["hopper"] = hopper
    return old, new


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", default="llm_layers")
    ap.add_argument("--budget", type=int, default=24)
    ap.add_argument("--out", default="/tmp/sab")
    ap.add_argument("--backend", default="gpu", help="simulated: a CPU dry run of the script (modelled times)")
    ap.add_argument("--budget-s", type=float, default=0, help="stop queueing results after this (0: none)")
    ap.add_argument("--part", default="0/1", help="K/N: every N-th shape of the set from the K-th (one command each)")
    ap.add_argument("--rule", choices=sorted(RULES), default="deep",
                    help="deep: main against main plus deep variants; tma_store: main against main without the TMA store")
    ap.add_argument("--differing", action="store_true",
                    help="only the shapes where the two lists differ (an A/B, not the set's figure)")
    args = ap.parse_args()
    k, n = (int(x) for x in args.part.split("/"))
    tag = args.set + (f"_part{k}of{n}" if n > 1 else "") + ("_differing" if args.differing else "")
    tag += "" if args.rule == "deep" else f"_{args.rule}"
    _, old_name, new_name = RULES[args.rule]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lists, jobs, seen = {}, [], set()
    for shape in shapes_of(args.set)[k::n]:
        old, new = shortlists(shape, args.budget, rule=args.rule)
        if args.differing and {c.id for c in old} == {c.id for c in new}:
            continue
        lists[shape] = ({c.id for c in old}, {c.id for c in new})
        for c in old + new:
            if (c.id, shape) not in seen:
                seen.add((c.id, shape))
                jobs.append((c, shape))
    changed = sum(o != n for o, n in lists.values())
    print(f"{len(jobs)} evaluations on {len(lists)} shapes; the shortlists differ on {changed}", flush=True)
    times: dict = defaultdict(dict)
    lib: dict = {}
    for e in side_by_side(jobs, out / f"{tag}.sqlite", "shortlist_ab.py", args):
        if e.ok:
            times[e.shape][e.kernel_id] = e.time_ms
            lib[e.shape] = e.best_library_ms
    rows = []
    for shape, (old, new) in lists.items():
        t = times.get(shape, {})
        if not (old | new) <= set(t):  # cut by the budget, or a failure: the two lists' bests would not compare
            continue
        best_old = min((t[k] for k in old if k in t), default=None)
        best_new = min((t[k] for k in new if k in t), default=None)
        if best_old and best_new and lib.get(shape):
            rows.append({"shape": str(shape), "bucket": shape.bucket, "lib_ms": lib[shape],
                         old_name: lib[shape] / best_old, new_name: lib[shape] / best_new})
    (out / f"{tag}_shortlist_ab.json").write_text(json.dumps(rows, indent=1))
    if args.backend != "gpu":
        print("SIMULATED (the CPU test double's modelled times, not measurements)")
    if len(rows) < len(lists):
        print(f"{len(lists) - len(rows)} of {len(lists)} shapes left out: not every configuration of both lists "
              "was measured there (the budget cut the run, or a configuration failed)")
    if not rows:
        return
    by = defaultdict(list)
    for r in rows:
        by[r["bucket"]].append(r)
    a, b = old_name, new_name
    print(f"{'FLOP bucket':<14} {'shapes':>6} {a + ' vs lib':>13} {b + ' vs lib':>13} {'min ' + a:>10} {'min ' + b:>10}")
    order = ["<1 GFLOP", "1-10 GFLOP", "10-100 GFLOP", "0.1-1 TFLOP", ">=1 TFLOP"]
    for bucket, rs in sorted(by.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else 99) + [("all", rows)]:
        print(f"{bucket:<14} {len(rs):>6} {geomean([r[a] for r in rs]):>13.3f} {geomean([r[b] for r in rs]):>13.3f} "
              f"{min(r[a] for r in rs):>10.3f} {min(r[b] for r in rs):>10.3f}")
    for r in sorted(rows, key=lambda r: r[b] / r[a]):
        if abs(r[b] / r[a] - 1) > 0.01:
            print(f"  {r['shape']:<18} {a} {r[a]:.3f} {b} {r[b]:.3f}")


if __name__ == "__main__":
    main()
