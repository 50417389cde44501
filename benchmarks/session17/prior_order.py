"""`evo sweep sweep.sample=shortlist sweep.order=prior` offline: of each shape's shortlist picks (16-24), how
good is the best of the first B when the shipped prior picks and orders them, against the families' own
(heuristic, rank-major) order? No GPU needed: it reads the shortlist arms of the five `evo compare` runs
kept in the repository (sessions 12, 13, 14, and two in 17), whose 14 shapes the prior never saw. Only the
two session-17 runs timed the shortlist as it is now; the older ones timed earlier shortlists.

    python benchmarks/session17/prior_order.py > benchmarks/session17/prior_order.log

Per budget B: the geomean over shapes of (best of all picks / best of the first B), and the shapes whose
first B hold a pick within 2% of the best; each compare's own 24 picks, in the order they ran (the sweep's)
and in the prior's predicted order.
"""
from __future__ import annotations

import math
import sqlite3
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from prior_refit import COMPARES  # noqa: E402

from evo.core.shapes import Shape  # noqa: E402
from evo.search import cost_prior  # noqa: E402
from evo.search.cost_model import CostModel, features  # noqa: E402
from evo.search.cost_prior import ArchivedKernel  # noqa: E402

BUDGETS = (1, 2, 4, 8, 12, 16)


def shortlist_runs(tarball: str, tmp: Path) -> dict[Shape, list[tuple[float, ArchivedKernel]]]:
    """Per shape, the shortlist arm's correct evaluations in the order they ran: (time, kernel)."""
    dest = tmp / tarball.replace("/", "_")
    dest.mkdir()
    with tarfile.open(REPO / tarball) as t:
        t.extractall(dest, filter="data")
    db = sqlite3.connect(next(dest.rglob("shortlist.sqlite")))
    out: dict[Shape, list] = {}
    for M, N, K, t, kid, src, fam in db.execute(
            "select e.M, e.N, e.K, e.time_ms, k.id, k.source, k.family from evaluations e join kernels k "
            "on k.id = e.kernel_id where e.status = 'ok' order by e.id"):
        out.setdefault(Shape(M, N, K), []).append((t, ArchivedKernel(kid, src, fam)))
    db.close()
    return out


def main() -> None:
    model = CostModel(prior=cost_prior.load())
    print(f"{'compare':<18} {'order':<10} " + " ".join(f"{'B=' + str(b):>14}" for b in BUDGETS))
    with tempfile.TemporaryDirectory() as name:
        for label, tarball in COMPARES.items():
            runs = shortlist_runs(tarball, Path(name))
            for order_name in ("heuristic", "prior"):
                cells = []
                for b in BUDGETS:
                    ratios, within = [], 0
                    for shape, rows in runs.items():
                        times = [t for t, _ in rows]
                        idx = list(range(len(rows)))
                        if order_name == "prior":
                            pred = model.predict([features(k, shape) for _, k in rows])
                            idx.sort(key=lambda i: (pred[i], i))
                        first = min(times[i] for i in idx[:b])
                        ratios.append(min(times) / first)
                        within += first <= min(times) * 1.02
                    g = math.exp(sum(map(math.log, ratios)) / len(ratios))
                    cells.append(f"{g:.3f} {within:>2}/{len(runs)}")
                print(f"{label:<18} {order_name:<10} " + " ".join(f"{c:>14}" for c in cells))


if __name__ == "__main__":
    main()
