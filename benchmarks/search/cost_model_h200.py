"""How well the search's cost model (evo/search/cost_model.py) ranks kernels the H200 really timed.

No GPU needed: it reads archives of H200 sweeps kept in benchmarks/archives/ (every correct
evaluation with its kernel source), fits the model exactly as the search does (features of the
source's genome and the shape, target log(time / roofline floor)) on some shapes and scores it on
shapes it never saw:
- per held-out shape, Spearman rank correlation between predicted and measured time;
- screening: of a shape's candidates, evaluate only the model's best third (or the best k): how
  close does the best of those come to the shape's true best among the candidates, against a
  random third of the same size (the budget screening would save);
- where the measured best sits in the model's order (how many evaluations in the model's order are
  needed to reach it, against the expected count in random order).
Folds: the grid125 sweep's shapes in 5 folds (fit on 4/5, score on 1/5), then fit on all of grid125
and score on the llm_layers sweep (other shapes, another run) and on the random sweeps.

    python benchmarks/search/cost_model_h200.py > benchmarks/search/cost_model_h200.log
"""
from __future__ import annotations

import math
import random
import statistics
import tarfile
import tempfile
from pathlib import Path

from evo.archive import Archive
from evo.archive.queries import evaluation_trace, resolve_run
from evo.core.shapes import Shape
from evo.search import cost_prior
from evo.search.cost_model import CostModel, features, spearman
from evo.search.cost_prior import ArchivedKernel, fit_rows, rows_from_archive

HERE = Path(__file__).resolve().parents[1] / "archives"
GRID = HERE / "sweep_shortlist_grid125_h200_v5.sqlite.gz"
COMPARE = Path(__file__).resolve().parent / "compare24_h200_run3" / "archives.tgz"
OTHERS = {"llm_layers shortlist": HERE / "sweep_shortlist_llm_layers_h200.sqlite.gz",
          "random sweep, 8 shapes": HERE / "random_8shapes_h200.sqlite.gz",
          "random sweep, 2 gap shapes": HERE / "random_gap_shapes_h200.sqlite.gz"}


def load(path: Path) -> dict[Shape, list[tuple[ArchivedKernel, float]]]:
    """Per shape: (kernel, log(time / roofline floor)) of its correct evaluations."""
    out: dict[Shape, list] = {}
    for _, kernel, shape, y in rows_from_archive(path):
        out.setdefault(shape, []).append((kernel, y))
    return out


def fit(data: dict[Shape, list]) -> CostModel:
    return fit_rows([(f"{k.id}|{s}", k, s, y) for s, rows in data.items() for k, y in rows])


def score(model: CostModel, data: dict[Shape, list], rng: random.Random) -> dict:
    rhos, kept_third, random_third, evals_model, evals_random = [], [], [], [], []
    for shape, rows in data.items():
        if len(rows) < 6:
            continue
        times = [math.exp(y) for _, y in rows]  # time over the shape's floor: the same order as time
        pred = model.predict([features(c, shape) for c, _ in rows])
        rhos.append(spearman(pred, times))
        best = min(times)
        order = sorted(range(len(rows)), key=lambda i: pred[i])
        third = max(1, len(rows) // 3)
        kept_third.append(best / min(times[i] for i in order[:third]))
        random_third.append(statistics.mean(best / min(rng.sample(times, third)) for _ in range(200)))
        evals_model.append(1 + next(j for j, i in enumerate(order) if times[i] <= best * 1.02))
        # random order: expected position of the first of the c candidates within 2% of the best
        c = sum(1 for t in times if t <= best * 1.02)
        evals_random.append((len(rows) + 1) / (c + 1))
    return dict(shapes=len(rhos), rho=statistics.median(rhos), rho_p25=_q(rhos, .25), rho_p75=_q(rhos, .75),
                third=geomean(kept_third), random_third=geomean(random_third),
                n=statistics.mean(len(r) for r in data.values()),
                to_best_model=statistics.mean(evals_model), to_best_random=statistics.mean(evals_random))


def pooled_scores(scores: list[dict]) -> dict:
    """Scores of one shape each, pooled as `score` pools shapes."""
    rhos = sorted(s["rho"] for s in scores)
    return dict(shapes=len(scores), rho=statistics.median(rhos), rho_p25=_q(rhos, .25), rho_p75=_q(rhos, .75),
                third=geomean([s["third"] for s in scores]), random_third=geomean([s["random_third"] for s in scores]),
                n=statistics.mean(s["n"] for s in scores), to_best_model=statistics.mean(s["to_best_model"] for s in scores),
                to_best_random=statistics.mean(s["to_best_random"] for s in scores))


def geomean(xs: list[float]) -> float:
    return math.exp(statistics.mean(math.log(x) for x in xs))


def _q(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def header(first: str) -> str:
    return (f"{first:<42} {'shapes':>6} {'cands':>6} {'rho':>6} {'[p25-p75]':>11} {'best 1/3':>10}"
            f" {'random 1/3':>12} {'to best':>10} {'random to':>11}")


def line(name: str, s: dict) -> str:
    return (f"{name:<42} {s['shapes']:>6} {s['n']:>6.1f} {s['rho']:>6.2f} [{s['rho_p25']:.2f}-{s['rho_p75']:.2f}]"
            f" {s['third']:>10.3f} {s['random_third']:>12.3f} {s['to_best_model']:>10.1f} {s['to_best_random']:>11.1f}")


def main() -> None:
    rng = random.Random(0)
    grid = load(GRID)
    print("cost model on H200 measurements: fit on some shapes, scored on shapes it never saw")
    print(header("held-out set"))
    shapes = sorted(grid)
    rng.shuffle(shapes)
    folds = [shapes[i::5] for i in range(5)]
    for i, held in enumerate(folds):
        train = {s: grid[s] for s in shapes if s not in held}
        print(line(f"grid125 fold {i + 1}/5", score(fit(train), {s: grid[s] for s in held}, rng)))
    for name, path in (("grid125", GRID), ("llm_layers shortlist", OTHERS["llm_layers shortlist"])):
        order = shortlist_order(path)
        print(f"{name}'s picks in the families' heuristic order (the sweep's own): a pick within 2% of the best "
              f"after {statistics.mean(order):.1f} evaluations (mean over {len(order)} shapes)")
    model = fit(grid)
    for name, path in OTHERS.items():
        print(line(f"{name} (fit: grid125)", score(model, load(path), rng)))
    # the random sweeps' own kind of kernel (random genomes of the tensor-core families, as a search's
    # mutants are): fit on the other random-sweep shapes, score the one left out
    pooled = {s: rows for path in list(OTHERS.values())[1:] for s, rows in load(path).items()}
    per_shape = [score(fit({s: pooled[s] for s in pooled if s != held}), {held: pooled[held]}, rng)
                 for held in sorted(pooled)]
    print(line("random sweeps, one shape left out", pooled_scores(per_shape)))
    compare_shapes(rng)
    print("rho: median (p25-p75) per-shape Spearman of predicted vs measured time. best 1/3: geomean of")
    print("(true best / best of the model's predicted best third) over shapes; random 1/3: the same for a")
    print("random third (mean of 200 draws). to best: evaluations in the model's order until one within 2%")
    print("of the shape's best; random to: the expected count in random order. cands: candidates per shape.")


def compare_shapes(rng: random.Random) -> None:
    """The shipped prior (evo/search/cost_prior.json, fit without these 14 shapes) on what `evo compare`
    measured on them (benchmarks/search/compare24_h200_run3/archives.tgz): the shortlist arm's 24
    picks per shape, where the heuristic order is known, and every kernel any arm measured."""
    prior = cost_prior.load()
    if prior is None or not COMPARE.exists():
        return
    model = CostModel(prior=prior)
    shortlist, every_kernel, heuristic = compare_archives()
    print(line("compare shapes, shortlist picks (prior)", score(model, shortlist, rng)))
    print(line("compare shapes, all arms' kernels (prior)", score(model, every_kernel, rng)))
    print(f"the same 24 shortlist picks per shape in the families' heuristic order: a pick within 2% of the best after "
          f"{statistics.mean(heuristic):.1f} evaluations (mean over {len(heuristic)} shapes)")


def compare_archives() -> tuple[dict[Shape, list], dict[Shape, list], list[int]]:
    """What `evo compare` measured on the 14 compare shapes: the shortlist arm's picks per shape, every
    kernel any arm measured (its best time on the shape), and the shortlist's own order to the best."""
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(COMPARE) as t:
            t.extractall(tmp, filter="data")
        folder = Path(tmp) / "compare24"
        shortlist = load(folder / "shortlist.sqlite")
        everything: dict[Shape, dict[str, tuple]] = {}
        for path in sorted(folder.glob("*.sqlite")):
            for shape, rows in load(path).items():
                for kernel, y in rows:
                    if kernel.id not in everything.setdefault(shape, {}) or y < everything[shape][kernel.id][1]:
                        everything[shape][kernel.id] = (kernel, y)
        heuristic = shortlist_order(folder / "shortlist.sqlite")
    return shortlist, {s: list(d.values()) for s, d in everything.items()}, heuristic


def shortlist_order(path: Path) -> list[int]:
    """Per shape, evaluations in the sweep's own (heuristic, rank-major) order until one within 2% of its best."""
    archive = Archive.open(path, create=False, readonly=True)
    found: dict[Shape, list] = {}
    for r in evaluation_trace(archive, resolve_run(archive, None)["id"]):  # speedups over one library time per shape
        found.setdefault(Shape(r["M"], r["N"], r["K"]), []).append(r["speedup"] or 0.0)
    out = []
    for speedups in found.values():
        best = max(speedups)
        out.append(1 + next(i for i, x in enumerate(speedups) if x >= best / 1.02))
    return out


if __name__ == "__main__":
    main()
