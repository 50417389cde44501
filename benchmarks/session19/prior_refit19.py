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

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session17"))
from prior_refit import FIRST, S16, report  # noqa: E402

S19 = ["benchmarks/session19/grid125/grid125.sqlite.gz", "benchmarks/session19/llm_layers/llm_layers.sqlite.gz"]
S19_RANDOM = ["benchmarks/session19/worst/random.sqlite.xz", "benchmarks/session19/worst/random120.sqlite.xz"]
SETS = {
    "shipped (first five + session16 sweeps)": FIRST + S16,
    "first five + session19 sweeps (PDL) in place of session16's": FIRST + S19,
    "first five + session16 and session19 sweeps": FIRST + S16 + S19,
    "first five + session16 and session19 sweeps + session19 random genomes": FIRST + S16 + S19 + S19_RANDOM,
}


def main() -> None:
    report(SETS)


if __name__ == "__main__":
    main()
