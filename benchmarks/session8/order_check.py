"""Which order of a shape's shortlist picks reaches its best sooner: the shortlist's own order, the
order the search's cost model gives them (the shipped prior, `evo/search/cost_prior.json`, as the
search ranks its seeds and `next_pick` children before it has measured anything), or a random order.
Read from a shortlist sweep's archive that the prior never saw, every pick of every shape measured:

    python3 benchmarks/session8/order_check.py benchmarks/session8/run_c/llm_layers.sqlite.gz

Per order: how many evaluations a shape needs to reach a kernel within 2% of its best pick (mean), and
the geomean over shapes of best of the first n picks / best pick, for n = 1, 2, 4, 8, 12, 16. A shortlist sweep
evaluates rank by rank, so a shape's evaluations in archive order are its picks in shortlist order."""
from __future__ import annotations

import math
import random
import statistics
import sys
from pathlib import Path

from evo.archive import Archive
from evo.search import cost_prior
from evo.search.cost_model import CostModel, features
from evo.search.cost_prior import rows_from_archive


def picks_in_shortlist_order(path: str) -> dict[str, list[str]]:
    """shape -> kernel ids in the order the sweep evaluated them."""
    archive = Archive.open(Path(path), readonly=True)  # .sqlite.gz read as it is
    rows = archive.db.execute("select M, N, K, kernel_id from evaluations where kernel_id is not null "
                              "order by id").fetchall()
    archive.close()
    out: dict[str, list[str]] = {}
    for M, N, K, kid in rows:
        out.setdefault(f"{M}x{N}x{K}", []).append(kid)
    return out


def main(path: str) -> None:
    prior = cost_prior.load()
    assert prior is not None, "no shipped prior"
    model = CostModel(prior=prior)
    measured: dict[str, dict[str, tuple]] = {}  # shape -> kernel id -> (log time over floor, kernel, Shape)
    for _, kernel, shape, y in rows_from_archive(path):
        measured.setdefault(str(shape), {})[kernel.id] = (y, kernel, shape)
    order = picks_in_shortlist_order(path)
    rng = random.Random(0)
    to_best: dict[str, list[float]] = {"shortlist": [], "cost model": [], "random": []}
    best_of: dict[str, dict[int, list[float]]] = {k: {n: [] for n in (1, 2, 4, 8, 12, 16)} for k in to_best}
    for shape, ids in order.items():
        ids = [i for i in dict.fromkeys(ids) if i in measured.get(shape, {})]  # correct ones, first time each
        if len(ids) < 8:
            continue
        y = {i: measured[shape][i][0] for i in ids}
        best = min(y.values())
        pred = model.predict([features(measured[shape][i][1], measured[shape][i][2]) for i in ids])
        orders = {"shortlist": ids, "cost model": [ids[j] for j in sorted(range(len(ids)), key=lambda j: (pred[j], j))]}
        for name, seq in orders.items():
            to_best[name].append(1 + next(j for j, i in enumerate(seq) if y[i] <= best + math.log(1.02)))
            for n in best_of[name]:
                best_of[name][n].append(math.exp(min(y[i] for i in seq[:n]) - best))
        for name in ("random",):
            draws = [rng.sample(ids, len(ids)) for _ in range(200)]
            to_best[name].append(statistics.mean(1 + next(j for j, i in enumerate(d) if y[i] <= best + math.log(1.02))
                                                 for d in draws))
            for n in best_of[name]:
                best_of[name][n].append(statistics.mean(math.exp(min(y[i] for i in d[:n]) - best) for d in draws))
    shapes = len(to_best["shortlist"])
    print(f"{path}: {shapes} shapes with at least 8 correct picks (prior: {prior.rows} measurements)")
    print(f"{'order':<12} {'evals to 2% of best':>20} " + " ".join(f"{'first ' + str(n):>9}" for n in (1, 2, 4, 8, 12, 16)))
    for name in to_best:
        gm = [math.exp(statistics.mean(-math.log(x) for x in best_of[name][n])) for n in (1, 2, 4, 8, 12, 16)]
        print(f"{name:<12} {statistics.mean(to_best[name]):>20.1f} " + " ".join(f"{g:>9.3f}" for g in gm))


if __name__ == "__main__":
    main(sys.argv[1])
