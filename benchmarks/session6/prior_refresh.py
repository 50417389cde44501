"""Does a cost-model prior fit also on this session's sweeps rank the kernels of today's `evo compare`
(run_c: 14 shapes neither prior saw) better than the shipped one? No GPU: both priors are fit the way
`python -m evo.search.cost_prior` fits them, the 14 compare shapes excluded, and scored with
benchmarks/search/cost_model_h200.py's measures (Spearman per shape, evaluations in the model's order
to a kernel within 2% of the best, against random order).
    python3 benchmarks/session6/prior_refresh.py
"""
from __future__ import annotations

import random
import sys
import tarfile
import tempfile
from pathlib import Path

from evo.core.shapes import parse_shapes
from evo.search.cost_prior import fit_rows, rows_from_archive

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "search"))
from cost_model_h200 import line, load, score  # noqa: E402

OLD = [ROOT / "benchmarks/archives" / f"{n}.sqlite" for n in
       ("sweep_shortlist_grid125_h200_v5", "sweep_shortlist_llm_layers_h200", "random_8shapes_h200",
        "random_gap_shapes_h200", "search_8shapes_h200")]
NEW = [ROOT / "benchmarks/families/llm_layers_full_h200/llm_layers.sqlite.gz",
       ROOT / "benchmarks/session6/run_a/llm_layers.sqlite.gz", ROOT / "benchmarks/session6/run_c/llm_layers.sqlite.gz"]
COMPARE = "1x6144x4096,1x28672x4096,77x4096x4096,77x28672x4096,333x6144x4096,333x4096x14336,512x4096x4096," \
          "2048x28672x4096,197x3072x768,197x768x3072,64x1024x4096,256x4096x1024,1024x1024x1024,4096x4096x4096"


def main() -> None:
    held = frozenset(s for entry in COMPARE.split(",") for s in parse_shapes(entry))
    with tempfile.TemporaryDirectory() as tmp:
        old_rows = [r for p in OLD for r in rows_from_archive(p, exclude=held)]
        new_rows = old_rows + [r for p in NEW for r in rows_from_archive(p, exclude=held)]  # .gz read as is
        priors = {"shipped sources": fit_rows(old_rows), "+ llm_layers x3 (today's genome)": fit_rows(new_rows)}
        with tarfile.open(ROOT / "benchmarks/session6/run_c/compare24_archives.tgz") as t:
            t.extractall(tmp, filter="data")
        folder = Path(tmp) / "compare24"
        shortlist = load(folder / "shortlist.sqlite")
        everything: dict = {}
        for path in sorted(folder.glob("*.sqlite")):
            for shape, rows in load(path).items():
                for kernel, y in rows:
                    everything.setdefault(shape, {})[kernel.id] = min((kernel, y), everything.get(shape, {}).get(
                        kernel.id, (kernel, y)), key=lambda x: x[1])
        every = {s: list(d.values()) for s, d in everything.items()}
        print(f"fit rows: shipped sources {len(old_rows)}, with today's {len(new_rows)}")
        for name, fitted in priors.items():
            print(line(f"{name}: shortlist picks", score(fitted, shortlist, random.Random(0))))
            print(line(f"{name}: all arms' kernels", score(fitted, every, random.Random(0))))


if __name__ == "__main__":
    main()
