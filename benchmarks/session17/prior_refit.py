"""Would the cost model's prior rank better fit to newer archives? No GPU needed.

The first shipped prior (five archives of 2026-11-29/30) predates the hopper genes FIXUP, TAIL_SPLIT and
SWAP_AB, the deep pipelines and the TMA store, so its weights for them were 0. This fits candidate priors
to sets of archives (every set holds out the 14 shapes of benchmarks/search/compare_gpu.sh) and scores
each, as the search uses it (CostModel(prior=...), no measurements of its own), on what `evo compare`
runs measured on those 14 shapes: the shortlist arm's picks and every kernel any arm measured. Scores as
in benchmarks/search/cost_model_h200.py: median per-shape Spearman, and evaluations in the model's order
to a kernel within 2% of the shape's best (random order's expectation beside it).

The candidate sets were scored on the compares of sessions 12-14 and one was shipped (the sixteenth
session's sweeps added); the seventeenth session's two compares were measured after that choice.

    python benchmarks/session17/prior_refit.py > benchmarks/session17/prior_refit.log

Run from anywhere; it reads the repository's archives (unpacking the .xz and tarred ones to a temporary
folder).
"""
from __future__ import annotations

import lzma
import random
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks" / "search"))
from cost_model_h200 import header, line, load, score  # noqa: E402

from evo.core.shapes import Shape  # noqa: E402
from evo.search import cost_prior  # noqa: E402
from evo.search.cost_model import CostModel  # noqa: E402

COMPARE_SHAPES = ("1x6144x4096,1x28672x4096,77x4096x4096,77x28672x4096,333x6144x4096,333x4096x14336,512x4096x4096,"
                  "2048x28672x4096,197x3072x768,197x768x3072,64x1024x4096,256x4096x1024,1024x1024x1024,4096x4096x4096")
FIRST = [f"benchmarks/archives/{n}.sqlite.gz" for n in ("sweep_shortlist_grid125_h200_v5", "sweep_shortlist_llm_layers_h200",
                                                      "random_8shapes_h200", "random_gap_shapes_h200", "search_8shapes_h200")]
S16 = ["benchmarks/session16/grid125/grid125.sqlite.gz", "benchmarks/session16/llm_layers/llm_layers.sqlite.gz"]
S14_15 = ["benchmarks/session14/run_b/llm_layers.sqlite.xz", "benchmarks/session15/run_b0/grid125_part0of2.sqlite.xz",
          "benchmarks/session15/run_b1/grid125_part1of2.sqlite.xz"]
PAIRS = ["benchmarks/session14/run_a/stages.sqlite.xz", "benchmarks/session14/run_c/deep.sqlite.xz",
         "benchmarks/session15/run_a/deep.sqlite.xz", "benchmarks/session16/tma/tma/deep.sqlite.xz"]
SETS = {
    "first prior (its five archives)": FIRST,
    "+ session16 sweeps (shipped)": FIRST + S16,
    "session16 sweeps only": S16,
    "+ sessions 14-16 sweeps": FIRST + S16 + S14_15,
    "+ sessions 14-16 sweeps and pair A/Bs": FIRST + S16 + S14_15 + PAIRS,
}
COMPARES = {  # the compares' archives: sessions 12-14 before the choice, 17 after it
    "s12": "benchmarks/session12/run_b/compare24_archives.tgz",
    "s13": "benchmarks/session13/run_b/compare24_archives.tar.xz",
    "s14": "benchmarks/session14/run_d/compare24_archives.tar.xz",
    "s17 first prior": "benchmarks/session17/compare_first_prior/archives.tar.xz",
    "s17 refit prior": "benchmarks/session17/compare_refit_prior/archives.tar.xz",
}


def readable(path: str, tmp: Path) -> Path:
    """An archive as cost_prior reads it: .sqlite and .sqlite.gz as they are, .sqlite.xz unpacked."""
    src = REPO / path
    if src.suffix != ".xz":
        return src
    out = tmp / path.replace("/", "_")[:-3]
    with lzma.open(src) as f, open(out, "wb") as g:
        shutil.copyfileobj(f, g)
    return out


def held_out(tarball: str, tmp: Path) -> tuple[dict, dict]:
    """A compare's shortlist picks per shape, and every kernel any arm measured (its best time)."""
    dest = tmp / tarball.replace("/", "_")
    dest.mkdir()
    with tarfile.open(REPO / tarball) as t:
        t.extractall(dest, filter="data")
    folder = next(dest.rglob("shortlist.sqlite")).parent
    shortlist = load(folder / "shortlist.sqlite")
    every: dict[Shape, dict] = {}
    for path in sorted(folder.glob("*.sqlite")):
        for shape, rows in load(path).items():
            for kernel, y in rows:
                if kernel.id not in every.setdefault(shape, {}) or y < every[shape][kernel.id][1]:
                    every[shape][kernel.id] = (kernel, y)
    return shortlist, {s: list(d.values()) for s, d in every.items()}


def report(sets: dict[str, list[str]]) -> None:
    """Each candidate set's prior (the compare shapes held out), scored on every compare's shortlist picks
    and on all its arms' kernels (session 19's prior_refit19.py scores its own sets this way)."""
    exclude = frozenset(Shape.parse(s) for s in COMPARE_SHAPES.split(","))
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        tests = {c: held_out(t, tmp) for c, t in COMPARES.items()}
        unpacked = {p: readable(p, tmp) for paths in sets.values() for p in paths}
        for set_name, paths in sets.items():
            prior = cost_prior.build([unpacked[p] for p in paths], exclude=exclude)
            model = CostModel(prior=prior)
            print(f"\n{set_name}: {prior.rows} measurements from {len(paths)} archives", flush=True)
            print(header("held-out set"))
            for c, (shortlist, every) in tests.items():
                print(line(f"{c}: shortlist picks", score(model, shortlist, random.Random(0))))
                print(line(f"{c}: all arms' kernels", score(model, every, random.Random(0))), flush=True)


def main() -> None:
    report(SETS)


if __name__ == "__main__":
    main()
