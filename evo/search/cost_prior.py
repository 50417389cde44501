"""The cost model's prior: its fit to past measurements of one GPU model, shipped with evo.

A search's cost model (cost_model.py) starts empty and can rank nothing before a run has measured a
dozen kernels, which at 24 evaluations per shape is half the budget. The prior is the same model
fit to archives of earlier sweeps on the H200 (`cost_prior.json`, built by this module); the search
starts from it and pulls away from it as its own measurements arrive (ridge regression towards the
prior's weights). On the 14 compare shapes, which it never saw, the shipped prior's order reaches a
shortlist pick within 2% of the shape's best in 2.0-3.1 evaluations where random order takes 9.4-9.7
(benchmarks/session17/prior_refit.py, three compares' measurements; the first prior, fit before the
transposed, fix-up and tail-split genes existed: 5.6). Between kernels within a few percent of each
other its error is larger than their difference, and it ranks random genomes poorly until fit on that
kind of kernel: the search's own measurements of its mutants are what teach it those.

Rebuild it after changing `features` (a prior whose feature count differs is ignored, with a
warning) or with more archives:

    python -m evo.search.cost_prior ARCHIVE.sqlite... [--exclude SHAPES] [--out PATH]

`--exclude` holds shapes out of the fit (the shipped prior excludes the shapes of
benchmarks/search/compare_gpu.sh, so that `evo compare` on them measures a prior that never saw them).
"""
from __future__ import annotations

import argparse
import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from evo.archive import Archive
from evo.archive.queries import correct_timings
from evo.core.records import Peaks
from evo.core.shapes import Shape
from evo.search.cost_model import CostModel, Prior, features

log = logging.getLogger(__name__)

PRIOR_PATH = Path(__file__).with_name("cost_prior.json")


@dataclass(frozen=True)
class ArchivedKernel:
    """What `features` reads of a candidate: its source and family."""
    id: str
    source: str
    family: str | None


def rows_from_archive(path: str | Path, *, exclude: frozenset[Shape] = frozenset()
                      ) -> list[tuple[str, ArchivedKernel, Shape, float]]:
    """(key, kernel, shape, log(time / roofline floor)) of every correct evaluation in an archive
    (the best time of each kernel on each shape), shapes in `exclude` and GPUs without measured
    peaks left out. A gzipped archive (`.sqlite.gz`, as benchmarks/ keeps them) is read as it is."""
    archive = Archive.open(Path(path), create=False, readonly=True)
    try:
        found = correct_timings(archive)
    finally:
        archive.close()
    out = []
    for r in found:
        shape = Shape(r["M"], r["N"], r["K"])
        if shape in exclude or not r["peak_tflops"]:
            continue
        floor = Peaks(r["peak_tflops"], r["bandwidth_gbs"]).floor_ms(shape.flops, shape.min_bytes)
        out.append((f"{r['kernel_id']}|{shape}", ArchivedKernel(r["kernel_id"], r["source"], r["family"]), shape,
                    math.log(r["time_ms"] / floor)))
    return out


def fit_rows(rows: list[tuple[str, ArchivedKernel, Shape, float]], *, num_sms: int = 132) -> CostModel:
    model = CostModel()
    for key, kernel, shape, target in rows:
        model.add(key, features(kernel, shape, num_sms=num_sms), target)  # type: ignore[arg-type]
    model.fit()
    return model


def build(paths: list[str | Path], *, exclude: frozenset[Shape] = frozenset(), gpu: str = "NVIDIA H200") -> Prior:
    rows = [r for p in paths for r in rows_from_archive(p, exclude=exclude)]
    if not rows:
        raise SystemExit("no correct evaluations in those archives: nothing to fit")
    model = fit_rows(rows)
    assert model._w is not None and model._mu is not None and model._sd is not None
    return Prior(gpu, model._mu, model._sd, model._w, len(rows))


def save(prior: Prior, path: Path, *, sources: list[str], exclude: list[str]) -> None:
    path.write_text(json.dumps({
        "gpu": prior.gpu, "rows": prior.rows, "sources": sources, "excluded_shapes": exclude,
        "mu": [round(float(v), 6) for v in prior.mu], "sd": [round(float(v), 6) for v in prior.sd],
        "w": [round(float(v), 6) for v in prior.w]}, indent=1) + "\n")


def load(path: Path = PRIOR_PATH) -> Prior | None:
    """The shipped prior, or None (with a warning) when missing or fit to other features."""
    if not path.exists():
        return None
    d = json.loads(path.read_text())
    n = len(features(ArchivedKernel("", "", None), Shape(64, 64, 64)))  # type: ignore[arg-type]
    if len(d["mu"]) != n or len(d["sd"]) != n or len(d["w"]) != n + 1:
        log.warning(f"{path} was fit to {len(d['mu'])} features, the cost model has {n}: the search starts "
                    f"without a prior (rebuild it: python -m evo.search.cost_prior ARCHIVE...)")
        return None
    # a feature constant in the fit has sd ~0, stored as 0: CostModel.fit scales such a feature by 1
    return Prior(d["gpu"], np.array(d["mu"]), np.array(d["sd"]), np.array(d["w"]), int(d["rows"]))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m evo.search.cost_prior", description=__doc__.split("\n\n")[0])
    ap.add_argument("archives", nargs="+", help="archives of sweeps or searches on one GPU model")
    ap.add_argument("--exclude", default="", help="shapes to hold out, e.g. 1x6144x4096,77x4096x4096")
    ap.add_argument("--gpu", default="NVIDIA H200", help="the GPU model the archives were measured on")
    ap.add_argument("--out", type=Path, default=PRIOR_PATH,
                    help=f"where to write it (default: the prior this evo ships and loads, {PRIOR_PATH})")
    a = ap.parse_args(argv)
    excluded = [s for s in a.exclude.replace("[", "").replace("]", "").split(",") if s.strip()]
    if not excluded:
        print("no shapes held out (--exclude): evo compare on any of these archives' shapes will measure a prior "
              "that has seen them")
    prior = build(a.archives, exclude=frozenset(Shape.parse(s.strip()) for s in excluded), gpu=a.gpu)
    save(prior, a.out, sources=[str(p) for p in a.archives], exclude=excluded)  # as given: the folder tells sessions apart
    print(f"wrote {a.out}: {prior.rows} measurements, {prior.n_features} features")


if __name__ == "__main__":
    main()
