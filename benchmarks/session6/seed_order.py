"""Seed order on archived shortlist picks (no GPU): evaluations to a pick within 2% of the best, and the best
of the first two, in the heuristic order, the shipped prior's, and the hedge (heuristic #1, then the prior).
    python3 benchmarks/session6/seed_order.py SHORTLIST.sqlite"""
import sqlite3
import statistics
import sys

from evo.core.shapes import Shape
from evo.search.cost_model import CostModel, features
from evo.search.cost_prior import ArchivedKernel, load

model = CostModel(prior=load())
def evals_to(order, times):
    best = min(times)
    return 1 + next(j for j, i in enumerate(order) if times[i] <= best * 1.02)
res: dict[str, list] = {k: [] for k in ("heuristic", "prior", "hedge (heuristic #1, then prior)", "best of first 2: heuristic",
                                         "best of first 2: prior", "best of first 2: hedge")}
for path in sys.argv[1:]:
    db = sqlite3.connect(path)
    shapes = db.execute("select distinct M,N,K from evaluations").fetchall()
    for M, N, K in shapes:
        rows = db.execute("select e.time_ms, k.id, k.source, k.family from evaluations e join kernels k on k.id=e.kernel_id "
                          "where M=? and N=? and K=? and status='ok' order by e.id", (M, N, K)).fetchall()
        shape = Shape(M, N, K)
        times = [r[0] for r in rows]
        pred = model.predict([features(ArchivedKernel(r[1], r[2], r[3]), shape) for r in rows])
        h = list(range(len(rows)))
        p = sorted(h, key=lambda i: (pred[i], i))
        g = [0] + [i for i in p if i != 0]
        for name, order in (("heuristic", h), ("prior", p), ("hedge (heuristic #1, then prior)", g)):
            res[name].append(evals_to(order, times))
            res["best of first 2: " + name.split()[0]].append(min(times) / min(times[i] for i in order[:2]))
for k, v in res.items():
    print(f"{k:40} {statistics.mean(v) if 'first 2' not in k else statistics.geometric_mean(v):.3f}  ({len(v)} shapes)")
