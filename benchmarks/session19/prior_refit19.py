"""Would the cost model's prior rank better fitted to this session's sweeps, timed as programmatic dependent
launches? No GPU needed. Session 17's harness (`session17/prior_refit.py`): each candidate prior is fitted
with the 14 shapes of benchmarks/search/compare_gpu.sh held out and scored, as the search uses it, on what
the five `evo compare` runs in the repository measured on those shapes (plain launches: PDL moves small
shapes' times by a near-uniform 0.1-0.35 us, which should not reorder them much).

Decided before running: ship a candidate only if, on both of session 17's compares (the shortlist as it
is now), it needs no more evaluations to a kernel within 2% of the best than the shipped prior, for the
shortlist picks and for all arms' kernels, with a median Spearman no lower.

    python benchmarks/session19/prior_refit19.py > benchmarks/session19/prior_refit19.log
"""
from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks" / "session17"))
sys.path.insert(0, str(REPO / "benchmarks" / "search"))
from cost_model_h200 import header, line, score  # noqa: E402
from prior_refit import COMPARE_SHAPES, COMPARES, FIRST, S16, held_out, readable  # noqa: E402

from evo.core.shapes import Shape  # noqa: E402
from evo.search import cost_prior  # noqa: E402
from evo.search.cost_model import CostModel  # noqa: E402

S19 = ["benchmarks/session19/grid125/grid125.sqlite.gz", "benchmarks/session19/llm_layers/llm_layers.sqlite.gz"]
S19_RANDOM = ["benchmarks/session19/worst/random.sqlite.xz", "benchmarks/session19/worst/random120.sqlite.xz"]
SETS = {
    "shipped (first five + session16 sweeps)": FIRST + S16,
    "first five + session19 sweeps (PDL) in place of session16's": FIRST + S19,
    "first five + session16 and session19 sweeps": FIRST + S16 + S19,
    "first five + session16 and session19 sweeps + session19 random genomes": FIRST + S16 + S19 + S19_RANDOM,
}


def main() -> None:
    exclude = frozenset(Shape.parse(s) for s in COMPARE_SHAPES.split(","))
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        tests = {c: held_out(t, tmp) for c, t in COMPARES.items()}
        unpacked = {p: readable(p, tmp) for paths in SETS.values() for p in paths}
        for set_name, paths in SETS.items():
            prior = cost_prior.build([unpacked[p] for p in paths], exclude=exclude)
            model = CostModel(prior=prior)
            print(f"\n{set_name}: {prior.rows} measurements from {len(paths)} archives", flush=True)
            print(header("held-out set"))
            for c, (shortlist, every) in tests.items():
                print(line(f"{c}: shortlist picks", score(model, shortlist, random.Random(0))))
                print(line(f"{c}: all arms' kernels", score(model, every, random.Random(0))), flush=True)


if __name__ == "__main__":
    main()
