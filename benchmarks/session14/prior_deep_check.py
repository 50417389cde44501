"""How the cost model's shipped prior (fit on pipelines of 2-7 stages) ranks pipelines deeper than 7,
held out: run_c's pairs (a shortlist pick and the same configuration with the deepest pipeline that
fits), split in two halves by shape. For each half: the shipped prior, and a prior refit on its sources
plus run_a's pairs and the other half of run_c (the compare shapes held out, as the shipped prior).
Prints, per half and prior, the sign agreement on the pairs that differ by more than 2%, the predicted
and measured geomean of pick / deepest, and the correlation of predicted and measured log ratios.

    python benchmarks/session14/prior_deep_check.py
"""
import argparse
import json
import logging
import lzma
import math
import tempfile
import zlib
from pathlib import Path

import numpy as np

from evo.core.shapes import Shape
from evo.core.summary import geomean
from evo.families import FAMILIES
from evo.search import cost_prior
from evo.search.cost_model import CostModel, features

HERE = Path(__file__).resolve().parent
ARCHIVES = HERE.parent / "archives"
SHIPPED = json.loads(cost_prior.PRIOR_PATH.read_text())
EXCLUDED = frozenset(Shape.parse(s) for s in SHIPPED["excluded_shapes"])


def unpacked(xz: Path, folder: Path) -> Path:
    out = folder / xz.name.removesuffix(".xz")
    out.write_bytes(lzma.open(xz).read())
    return out


def half(shape: str) -> int:
    return zlib.crc32(shape.encode()) % 2


def score(prior, pairs) -> str:
    model = CostModel()
    model.prior = prior
    fam, predicted, measured, agree, n = FAMILIES["hopper"], [], [], 0, 0
    for r in pairs:
        shape = Shape.parse(r["shape"])
        base, deep = fam.candidate(r["base"]), fam.candidate(dict(r["base"], STAGES=r["stages"]))
        pb, pd = model.predict([features(base, shape), features(deep, shape)])
        predicted.append(math.exp(pb - pd))
        measured.append(r["ratio"])
        if abs(math.log(r["ratio"])) > 0.02:
            n += 1
            agree += (predicted[-1] > 1) == (r["ratio"] > 1)
    corr = np.corrcoef(np.log(predicted), np.log(measured))[0, 1]
    return (f"{len(pairs)} pairs, sign agreement {agree}/{n}, predicted {geomean(predicted):.3f}, measured "
            f"{geomean(measured):.3f}, correlation {corr:.2f}")


def source_path(name: str) -> Path:
    """A source the shipped prior records: a bare file name in benchmarks/archives/ (the first prior), or a
    path from the repository's root (since the seventeenth session's refit)."""
    return ARCHIVES / name if "/" not in name else HERE.parents[1] / name


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    logging.disable(logging.WARNING)  # the shipped prior's sources are old gzipped archives: read as they are
    pairs = json.load(lzma.open(HERE / "run_c" / "pairs.json.xz"))
    with tempfile.TemporaryDirectory() as tmp:
        deep = unpacked(HERE / "run_c" / "deep.sqlite.xz", Path(tmp))
        stages = unpacked(HERE / "run_a" / "stages.sqlite.xz", Path(tmp))
        base_rows = [r for name in SHIPPED["sources"] for r in cost_prior.rows_from_archive(source_path(name),
                                                                                            exclude=EXCLUDED)]
        base_rows += cost_prior.rows_from_archive(stages, exclude=EXCLUDED)
        deep_rows = cost_prior.rows_from_archive(deep, exclude=EXCLUDED)
        for h in (0, 1):
            test = [r for r in pairs if half(r["shape"]) == h]
            print(f"half {h}, shipped prior: {score(cost_prior.load(), test)}")
            rows = base_rows + [r for r in deep_rows if half(str(r[2])) != h]
            m = cost_prior.fit_rows(rows)
            refit = cost_prior.Prior(SHIPPED["gpu"], m._mu, m._sd, m._w, len(rows))
            print(f"half {h}, refit with deep pipelines: {score(refit, test)}")


if __name__ == "__main__":
    main()
