"""Should the shipped cost-model prior learn the FIXUP gene from the tenth session's sweeps?

No GPU needed. The shipped prior (evo/search/cost_prior.json) is fit to five older H200 archives that
hold no FIXUP=1 kernel, so its weights for the two FIXUP columns are 0. The tenth session's two
shortlist sweeps (benchmarks/session10/run_b: llm_layers, run_c: grid125) hold FIXUP=1 picks. This
script fits priors with and without those sweeps (the 14 compare shapes always held out, as the
shipped prior holds them out) and scores them where it matters:

1. session10 shapes in 5 folds: fit on the old archives plus the session10 shapes of the other folds,
   score the held-out fold (Spearman per shape, evaluations in the model's order to a pick within 2%
   of the best); against the old prior alone, and against the same fit with the FIXUP columns held
   at 0 (what the fit gains from them, not from more rows). It also counts FIXUP pairs (one genome
   with FIXUP 0 and 1 on one shape), which would tell the columns' effect apart from the shape's.
2. the compare shapes (benchmarks/search/compare24_h200_run3), never in any fit: the shortlist picks
   and every kernel any arm measured (the search's mutants), as cost_model_h200.py scores the shipped
   prior: a refit that ranks mutants worse is not shipped (session 6 found one).

    python benchmarks/session11/prior_fixup.py > benchmarks/session11/prior_fixup.log
"""
from __future__ import annotations

import random
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "search"))
from cost_model_h200 import compare_archives, header, line, load, pooled_scores, score  # noqa: E402

from evo.core.shapes import Shape  # noqa: E402
from evo.search.cost_model import CostModel, Prior, features  # noqa: E402
from evo.search.cost_prior import ArchivedKernel, fit_rows  # noqa: E402

ARCH = ROOT / "benchmarks" / "archives"
OLD = [ARCH / f"{n}.sqlite.gz" for n in ("sweep_shortlist_grid125_h200_v5", "sweep_shortlist_llm_layers_h200",
                                          "random_8shapes_h200", "random_gap_shapes_h200", "search_8shapes_h200")]
NEW = [ROOT / "benchmarks/session10/run_b/llm_layers.sqlite.gz", ROOT / "benchmarks/session10/run_c/grid125.sqlite.gz"]
COMPARE = ROOT / "benchmarks/search/compare24_h200_run3/archives.tgz"
EXCLUDED = frozenset(Shape.parse(s) for s in (
    "1x6144x4096,1x28672x4096,77x4096x4096,77x28672x4096,333x6144x4096,333x4096x14336,512x4096x4096,"
    "2048x28672x4096,197x3072x768,197x768x3072,64x1024x4096,256x4096x1024,1024x1024x1024,4096x4096x4096").split(","))
FIXUP_LINE = re.compile(r"^\s*#define\s+FIXUP\s+[01]\b.*$", re.M)
N_FIXUP = 2  # the last two features: FIXUP flag, log2(parts) when ordered


def rows_of(data: dict[Shape, list]) -> list:
    return [(f"{k.id}|{s}", k, s, y) for s, rows in data.items() for k, y in rows]


def without_excluded(data: dict[Shape, list]) -> dict[Shape, list]:
    return {s: r for s, r in data.items() if s not in EXCLUDED}


class Blind:
    """A fitted model whose FIXUP columns read 0 (fit and predict): what the same rows teach without them."""

    def __init__(self, rows: list) -> None:
        self.model = CostModel()
        for key, k, s, y in rows:
            self.model.add(key, _blind(features(k, s)), y)
        self.model.fit()

    def predict(self, xs: list[list[float]]) -> list[float]:
        return self.model.predict([_blind(x) for x in xs])


def _blind(x: list[float]) -> list[float]:
    return x[:-N_FIXUP] + [0.0] * N_FIXUP


def fixup_pairs(data: dict[Shape, list]) -> list[tuple[Shape, ArchivedKernel, float, ArchivedKernel, float]]:
    """(shape, FIXUP=0 kernel, its log time, FIXUP=1 kernel, its log time) for every genome measured both ways."""
    out = []
    for shape, rows in data.items():
        by_rest: dict[str, dict[bool, tuple]] = {}
        for k, y in rows:
            m = FIXUP_LINE.search(k.source)
            if m is None:
                continue
            ordered = m.group(0).split()[2] == "1"
            by_rest.setdefault(FIXUP_LINE.sub("", k.source), {})[ordered] = (k, y)
        out += [(shape, d[False][0], d[False][1], d[True][0], d[True][1]) for d in by_rest.values() if len(d) == 2]
    return out


def prior_of(rows: list) -> Prior:
    m = fit_rows(rows)
    assert m._w is not None and m._mu is not None and m._sd is not None
    return Prior("NVIDIA H200", m._mu, m._sd, m._w, len(rows))


def main() -> None:
    rng = random.Random(0)
    old = {}
    for p in OLD:
        for s, r in without_excluded(load(p)).items():
            old.setdefault(s, []).extend(r)
    new = {}
    for p in NEW:
        for s, r in without_excluded(load(p)).items():
            new.setdefault(s, []).extend(r)
    old_rows = rows_of(old)
    print(f"old archives: {len(old_rows)} measurements on {len(old)} shapes; session10 sweeps: "
          f"{sum(map(len, new.values()))} on {len(new)} shapes (the 14 compare shapes held out of both)")
    pairs_all = fixup_pairs(new)
    faster = sum(1 for *_, y0, _, y1 in pairs_all if y1 < y0)
    print(f"FIXUP pairs (one genome measured with FIXUP 0 and 1 on one shape) in the session10 sweeps: "
          f"{len(pairs_all)} (FIXUP=1 faster in {faster}); the shortlist picks one or the other")
    print()
    print("1. session10 shapes, 5 folds (fit never sees the held-out fold's shapes)")
    print(header("model"))
    shapes = sorted(new)
    rng.shuffle(shapes)
    folds = [shapes[i::5] for i in range(5)]
    old_model = fit_rows(old_rows)
    arms: dict[str, list] = {"old archives (shipped prior)": [], "old + session10": [],
                             "old + session10, FIXUP columns 0": []}
    for held in folds:
        test = {s: new[s] for s in held}
        train_rows = old_rows + rows_of({s: new[s] for s in shapes if s not in held})
        models = {"old archives (shipped prior)": old_model, "old + session10": fit_rows(train_rows),
                  "old + session10, FIXUP columns 0": Blind(train_rows)}
        for name, model in models.items():
            arms[name] += [score(model, {s: rows}, random.Random(1)) for s, rows in test.items() if len(rows) >= 6]
    for name, scores in arms.items():
        print(line(name, pooled_scores(scores)))
    print()
    print("2. the compare shapes (no fit saw them), each prior used as the search uses it (CostModel(prior=...))")
    candidates = {"shipped prior (old archives)": prior_of(old_rows),
                  "prior from old + session10": prior_of(old_rows + rows_of(new))}
    shortlist, everything, _ = compare_archives()
    for name, prior in candidates.items():
        model = CostModel(prior=prior)
        print(line(f"{name}: shortlist picks", score(model, shortlist, random.Random(2))))
        print(line(f"{name}: all arms' kernels", score(model, everything, random.Random(2))))
        w = prior.w  # standardized features, then the intercept
        print(f"   {name}: FIXUP weights (standardized) flag {w[-1 - N_FIXUP]:+.3f}, log2 parts {w[-2]:+.3f}")
    print()
    print("rho: median (p25-p75) per-shape Spearman of predicted vs measured time; best 1/3: geomean of true best over")
    print("the best of the model's predicted third; to best: evaluations in the model's order to a pick within 2% of")
    print("the shape's best; random to: the same expected in random order.")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
