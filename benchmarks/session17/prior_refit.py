"""Would the cost model's prior rank better fit to newer archives? No GPU needed.

The shipped prior (evo/search/cost_prior.json) is fit to archives that predate the hopper genes FIXUP,
TAIL_SPLIT, SWAP_AB, the deep pipelines and the TMA store, so its weights for them are 0. This fits
candidate priors to sets of archives (every set holds out the 14 shapes of
benchmarks/search/compare_gpu.sh) and scores each, as the search uses it (CostModel(prior=...), no
measurements of its own), on what three `evo compare` runs measured on those 14 shapes: the shortlist
arm's picks and every kernel any arm measured (sessions 12, 13 and 14). Scores as in
benchmarks/search/cost_model_h200.py: median per-shape Spearman, and evaluations in the model's order to
a kernel within 2% of the shape's best (random order's expectation beside it).

    python benchmarks/session17/prior_refit.py ARCHIVES_DIR COMPARE_DIR...

ARCHIVES_DIR holds the archives named in SETS below (decompressed where benchmarks/ keeps them as .xz).
"""
from __future__ import annotations

import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "search"))
from cost_model_h200 import header, line, load, score  # noqa: E402

from evo.core.shapes import Shape  # noqa: E402
from evo.search import cost_prior  # noqa: E402
from evo.search.cost_model import CostModel  # noqa: E402

COMPARE_SHAPES = ("1x6144x4096,1x28672x4096,77x4096x4096,77x28672x4096,333x6144x4096,333x4096x14336,512x4096x4096,"
                  "2048x28672x4096,197x3072x768,197x768x3072,64x1024x4096,256x4096x1024,1024x1024x1024,4096x4096x4096")
ARCHIVES = Path(__file__).resolve().parents[1] / "archives"
SHIPPED = [ARCHIVES / f"{n}.sqlite.gz" for n in ("sweep_shortlist_grid125_h200_v5", "sweep_shortlist_llm_layers_h200",
                                               "random_8shapes_h200", "random_gap_shapes_h200", "search_8shapes_h200")]
SETS = {  # name -> archives in ARCHIVES_DIR (besides SHIPPED where the name says so)
    "shipped sources (refit)": [],
    "shipped + session16 sweeps": ["g16.sqlite.gz", "l16.sqlite.gz"],
    "session16 sweeps only": ["g16.sqlite.gz", "l16.sqlite.gz"],
    "shipped + session14-16 sweeps": ["g16.sqlite.gz", "l16.sqlite.gz", "session14_run_b_llm_layers.sqlite",
                                      "session15_run_b0_grid125_part0of2.sqlite", "session15_run_b1_grid125_part1of2.sqlite"],
    "shipped + session14-16 sweeps and pairs": ["g16.sqlite.gz", "l16.sqlite.gz", "session14_run_b_llm_layers.sqlite",
                                                "session15_run_b0_grid125_part0of2.sqlite",
                                                "session15_run_b1_grid125_part1of2.sqlite", "session14_run_a_stages.sqlite",
                                                "session14_run_c_deep.sqlite", "session15_run_a_deep.sqlite",
                                                "session16_tma_tma_deep.sqlite"],
}


def held_out(folder: Path) -> tuple[dict, dict]:
    """A compare folder's shortlist picks per shape, and every kernel any arm measured (its best time)."""
    shortlist = load(folder / "shortlist.sqlite")
    every: dict[Shape, dict] = {}
    for path in sorted(folder.glob("*.sqlite")):
        for shape, rows in load(path).items():
            for kernel, y in rows:
                if kernel.id not in every.setdefault(shape, {}) or y < every[shape][kernel.id][1]:
                    every[shape][kernel.id] = (kernel, y)
    return shortlist, {s: list(d.values()) for s, d in every.items()}


def main() -> None:
    src, compares = Path(sys.argv[1]), [Path(p) for p in sys.argv[2:]]
    exclude = frozenset(Shape.parse(s) for s in COMPARE_SHAPES.split(","))
    tests = {c.name: held_out(c) for c in compares}
    priors = {"shipped prior": cost_prior.load()}
    for name, extra in SETS.items():
        paths = ([] if name.endswith("only") else SHIPPED) + [src / n for n in extra]
        priors[name] = cost_prior.build(paths, exclude=exclude)
        print(f"{name}: {priors[name].rows} measurements from {len(paths)} archives", flush=True)
    for name, prior in priors.items():
        model = CostModel(prior=prior)
        print(f"\n{name}")
        print(header("held-out set"))
        for c, (shortlist, every) in tests.items():
            rng = random.Random(0)
            print(line(f"{c}: shortlist picks", score(model, shortlist, rng)))
            print(line(f"{c}: all arms' kernels", score(model, every, rng)))


if __name__ == "__main__":
    main()
