"""The shipped cost prior on kernels it was not fitted for (issue 14: a learned cost model's correlation on
held-out measurements, and the budget it saves). Session 19 timed 160 random hopper genomes on each of six
shapes where the shortlist does worst (`worst/random*.sqlite.xz`: seeded random samples of the valid
genome, not shortlist picks, timed as programmatic dependent launches); the prior
(evo/search/cost_prior.json) was fitted to sweeps of other sessions, none of these measurements, but
sweeps that timed the shortlist picks of five of these shapes (all but 512x512x16384). No GPU needed.

    python benchmarks/session19/prior_on_random.py > benchmarks/session19/prior_on_random.txt

Per shape: the rank correlation (Spearman) of predicted against measured time over the correct
evaluations; and how many evaluations reach a kernel within 2% of the sample's best, in the prior's order
against the expectation for a random order, (n + 1) / (g + 1) for g such kernels of n.
"""
from __future__ import annotations

import lzma
import math
import shutil
import tempfile
from pathlib import Path

from evo.core.shapes import Shape
from evo.search import cost_prior
from evo.search.cost_model import CostModel, features, spearman

HERE = Path(__file__).resolve().parent
ARCHIVES = ("worst/random.sqlite.xz", "worst/random120.sqlite.xz")


def rows(tmp: Path) -> dict[Shape, list]:
    """Per shape, (log measured time over the floor, kernel) of every correct evaluation in both samples."""
    out: dict[Shape, list] = {}
    for name in ARCHIVES:
        plain = tmp / Path(name).stem
        with lzma.open(HERE / name) as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst)
        for _key, kernel, shape, target in cost_prior.rows_from_archive(plain):
            out.setdefault(shape, []).append((target, kernel))
    return out


def main() -> None:
    model = CostModel(prior=cost_prior.load())
    print(f"{'shape':<16} {'n':>4} {'spearman':>9} {'within 2%':>10} {'prior order: evals':>19} "
          f"{'random order: expected':>23}")
    saved = []
    with tempfile.TemporaryDirectory() as name:
        for shape, found in sorted(rows(Path(name)).items(), key=lambda kv: kv[0].flops):
            measured = [t for t, _ in found]
            predicted = model.predict([features(k, shape) for _, k in found])
            best = min(measured)
            good = [t <= best + math.log(1.02) for t in measured]
            order = sorted(range(len(found)), key=lambda i: (predicted[i], i))
            first = next(n for n, i in enumerate(order, 1) if good[i])
            expected = (len(found) + 1) / (sum(good) + 1)
            saved.append(expected / first)
            print(f"{str(shape):<16} {len(found):>4} {spearman(predicted, measured):>9.2f} {sum(good):>10} "
                  f"{first:>19} {expected:>23.1f}")
    print(f"geomean of expected random-order evaluations / prior-order evaluations: "
          f"{math.exp(sum(map(math.log, saved)) / len(saved)):.2f}")


if __name__ == "__main__":
    main()
