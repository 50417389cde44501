"""How much of the best measured speed a shortlist rule keeps, judged on archived H200 measurements
(no GPU): for every shape, the best speedup over the best library that any archive measured for any
configuration, and the best among the configurations the current `evo.search.sweep.plan` (12 picks)
would evaluate that some archive measured (picks no archive measured count as missing: a lower bound).
  python3 shortlist_recall.py ARCHIVE.sqlite [ARCHIVE.sqlite ...]
Speedups are per archive (kernel and libraries timed in the same run); where archives measured the same
configuration, the best is kept. stdlib + evo."""
import json
import math
import random
import sqlite3
import sys

from evo.core.shapes import Shape
from evo.families import FAMILIES
from evo.search.sweep import plan


def measured(paths):
    best: dict = {}
    for path in paths:
        db = sqlite3.connect(path)
        for M, N, K, family, params, speedup in db.execute(
                "select e.M, e.N, e.K, k.family, k.params_json, max(e.speedup) from evaluations e join kernels k "
                "on k.id = e.kernel_id where e.status = 'ok' and not coalesce(e.throttled, 0) "
                "and e.speedup is not null group by e.M, e.N, e.K, k.id"):
            p = json.loads(params or "{}")
            if family in FAMILIES:
                p = FAMILIES[family].complete(p)
            key = (family, tuple(sorted(p.items())))
            cell = best.setdefault((M, N, K), {})
            cell[key] = max(cell.get(key, 0.0), speedup)
    return best


def main(paths):
    data = measured(paths)
    ratios, missing = [], 0
    for (M, N, K), cells in sorted(data.items()):
        picks = plan(sorted(FAMILIES), Shape(M, N, K), budget=12, sample="shortlist", rng=random.Random(0),
                     num_sms=132)
        keys = [(c.family, tuple(sorted(c.params.items()))) for c in picks]
        known = [cells[k] for k in keys if k in cells]
        missing += len(keys) - len(known)
        ratios.append(max(known, default=1e-3) / max(cells.values()))
    g = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
    print(f"{len(ratios)} shapes: shortlist's best known / best measured, geomean {g:.4f}, "
          f"min {min(ratios):.3f}, shapes below 0.97: {sum(r < 0.97 for r in ratios)}; "
          f"{missing} picks never measured (counted as missing)")


if __name__ == "__main__":
    main(sys.argv[1:])
