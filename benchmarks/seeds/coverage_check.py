"""Correctness of every family on every shape it declares it supports: the 1000-shape CUDA-L2 grid,
the llm_layers set and unaligned shapes (tails), with each family's top shortlist picks per shape
(the configurations a sweep or a search starts from) and its default. One fresh random draw per
check, no timing. A failure prints the shape, configuration and the evaluator's message.

Configurations outside the shortlists are added from EXTRA (the hopper multicast pairs, tail splits,
transposed products, stream-K, the TMA store and ping-pong consumers).
Usage (GPU machine): python3 benchmarks/seeds/coverage_check.py OUT_DIR [FAMILY ...]
With EVO_COVERAGE_ONLY=GENE (for example TMA_STORE), only the configurations where that gene is set
(non-zero) are checked: a new feature's coverage in a few minutes.
"""
import csv
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

from omegaconf import OmegaConf

from evo.config import EvaluatorConfig
from evo.core.shapes import Shape, build_shape_set
from evo.evaluation.evaluator import Evaluator
from evo.families import FAMILIES

ROOT = Path(__file__).resolve().parents[2]
PICKS = {"hopper": 6, "skinny": 4, "ampere": 3, "simt": 1}  # shortlist picks per shape, besides the default
EXTRA = {"hopper": [dict(FAMILIES["hopper"].default, CLUSTER_M=2),
                    dict(FAMILIES["hopper"].default, BM=128, BN=128, STAGES=5, CLUSTER_M=2, PERSISTENT=0),
                    # the tail split on every shape, whether or not a shortlist picks it: the widest cap,
                    # and two CTAs per SM (slots = 2 x SMs)
                    dict(FAMILIES["hopper"].default, TAIL_SPLIT=16),
                    dict(FAMILIES["hopper"].default, BM=64, BN=128, CONSUMERS=1, STAGES=4, CTAS_PER_SM=2,
                         TAIL_SPLIT=4),
                    # the transposed product on every shape: uneven tile rows, split-K, a tail split, tiny
                    # tiles two to an SM, one consumer with 200-row wgmmas
                    dict(FAMILIES["hopper"].default, SWAP_AB=1, BM=136, BN=128, STAGES=5),
                    dict(FAMILIES["hopper"].default, SWAP_AB=1, BM=8, BN=128, STAGES=5, SPLIT_K=3),
                    dict(FAMILIES["hopper"].default, SWAP_AB=1, BM=88, BN=256, STAGES=4, TAIL_SPLIT=16),
                    dict(FAMILIES["hopper"].default, SWAP_AB=1, BM=24, BN=64, CONSUMERS=1, STAGES=4, CTAS_PER_SM=2),
                    dict(FAMILIES["hopper"].default, SWAP_AB=1, BM=200, BN=64, CONSUMERS=1, STAGES=6),
                    # the ordered fix-up (FIXUP=1) of a tail split and of a transposed split-K
                    dict(FAMILIES["hopper"].default, TAIL_SPLIT=16, FIXUP=1),
                    dict(FAMILIES["hopper"].default, SWAP_AB=1, BM=8, BN=128, STAGES=5, SPLIT_K=3, FIXUP=1),
                    # stream-K on every shape: the widest tile, one consumer, two CTAs per SM, transposed
                    dict(FAMILIES["hopper"].default, STREAM_K=1),
                    dict(FAMILIES["hopper"].default, BM=128, BN=128, CONSUMERS=1, STAGES=6, STREAM_K=1),
                    dict(FAMILIES["hopper"].default, BM=64, BN=128, CONSUMERS=1, STAGES=4, CTAS_PER_SM=2, STREAM_K=1),
                    dict(FAMILIES["hopper"].default, SWAP_AB=1, BM=136, BN=128, STAGES=5, STREAM_K=1),
                    dict(FAMILIES["hopper"].default, BN=128, STAGES=6, STREAM_K=2),
                    dict(FAMILIES["hopper"].default, BN=192, STAGES=5, STREAM_K=2),
                    # the TMA store epilogue (benchmarks/session16): two staging tiles on the default (the
                    # shortlist's K <= 256 pick), one beside 2 CTAs per SM, two on one consumer's 64x64 tiles
                    dict(FAMILIES["hopper"].default, TMA_STORE=2),
                    dict(FAMILIES["hopper"].default, BM=128, BN=128, CONSUMERS=1, STAGES=3, CTAS_PER_SM=2, TMA_STORE=1),
                    dict(FAMILIES["hopper"].default, BM=64, BN=64, CONSUMERS=1, STAGES=7, TMA_STORE=2),
                    # ping-pong consumers (benchmarks/session24): tile shapes a consumer can own whole, with
                    # and without the TMA store
                    dict(FAMILIES["hopper"].default, BM=128, BN=128, STAGES=6, PINGPONG=1),
                    dict(FAMILIES["hopper"].default, BM=64, BN=256, STAGES=4, PINGPONG=1, TMA_STORE=2),
                    dict(FAMILIES["hopper"].default, BM=64, BN=128, STAGES=7, PINGPONG=1, TMA_STORE=2),
                    dict(FAMILIES["hopper"].default, BM=128, BN=64, STAGES=7, PINGPONG=1),
                    dict(FAMILIES["hopper"].default, BM=64, BN=64, STAGES=10, PINGPONG=1),
                    # ping-pong consumers in multicast pairs (benchmarks/session26), one with the TMA store
                    dict(FAMILIES["hopper"].default, BM=128, BN=128, STAGES=6, PINGPONG=1, CLUSTER_M=2),
                    dict(FAMILIES["hopper"].default, BM=128, BN=128, STAGES=6, PINGPONG=1, CLUSTER_M=2, TMA_STORE=2),
                    dict(FAMILIES["hopper"].default, BM=64, BN=256, STAGES=4, PINGPONG=1, CLUSTER_M=2)]}
ONLY = os.environ.get("EVO_COVERAGE_ONLY", "")
UNALIGNED = [Shape(1, 1, 1), Shape(5, 7, 13), Shape(100, 4095, 333), Shape(129, 136, 8), Shape(1, 8, 8),
             Shape(255, 264, 1000), Shape(1000, 1000, 1000), Shape(4097, 4103, 129), Shape(3, 16384, 72)]


def shape_set(name: str) -> list[Shape]:
    conf = OmegaConf.load(ROOT / "conf" / "shapes" / f"{name}.yaml")
    return build_shape_set(listed=list(conf.get("list") or []), grid=list(conf.get("grid") or []))


def main(out: Path, families: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    shapes = shape_set("cuda_l2") + shape_set("llm_layers") + UNALIGNED
    ev = Evaluator(EvaluatorConfig(backend="gpu", draws=1, modes=[], timeout_s=20)).start()
    num_sms = ev.devices[0].num_sms
    pairs, configs = [], {}
    for shape in shapes:
        for name in families:
            fam = FAMILIES[name]
            picks = fam.suggest(shape.M, shape.N, shape.K, num_sms, limit=PICKS[name])
            for params in picks + [fam.default] + EXTRA.get(name, []):
                if ONLY and not params.get(ONLY):
                    continue
                cand = fam.candidate(params, operator="coverage_check")
                if cand.declaration.supports(shape, num_sms=num_sms) and (cand.id, shape) not in configs:
                    configs[(cand.id, shape)] = (name, params)
                    pairs.append((cand, shape))
    kernels = len({c.id for c, _ in pairs})
    print(f"coverage check: {len(shapes)} shapes, {kernels} configurations, {len(pairs)} checks "
          f"on {ev.devices[0].key}", flush=True)
    rows, start = [], time.time()
    try:
        for e in ev.evaluate(pairs, measure_libraries=False):
            name, params = configs[(e.kernel_id, e.shape)]
            rows.append({"family": name, "params": json.dumps(params, sort_keys=True), "M": e.shape.M, "N": e.shape.N,
                         "K": e.shape.K, "status": str(e.status), "rel_err": e.max_rel_err, "error": e.error[:300]})
            if len(rows) % 1000 == 0:
                print(f"  {len(rows)}/{len(pairs)} checks, {time.time() - start:.0f}s", flush=True)
    except KeyboardInterrupt:  # `timeout -s INT`: report the checks that finished
        print(f"INTERRUPTED after {len(rows)} of {len(pairs)} checks: the figures below cover those only")
    ev.close()
    if not rows:
        return
    with open(out / "coverage.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"{len(rows)} checks in {time.time() - start:.0f}s")
    for name in families:
        mine = [r for r in rows if r["family"] == name]
        status = Counter(r["status"] for r in mine)
        errs = [r["rel_err"] for r in mine if r["rel_err"] is not None]
        covered = len({(r["M"], r["N"], r["K"]) for r in mine})
        print(f"{name}: {status.get('ok', 0)}/{len(mine)} ok over {covered} shapes, "
              f"{len({r['params'] for r in mine})} configurations; max rel. error {max(errs, default=0):.2e}; "
              f"statuses {dict(status)}")
        for r in [r for r in mine if r["status"] != "ok"][:10]:
            print(f"   FAIL {r['M']}x{r['N']}x{r['K']} {r['params']} {r['status']}: {r['error'][:160]}")
    correct = {(r["M"], r["N"], r["K"]) for r in rows if r["status"] == "ok"}
    uncovered = [s for s in shapes if (s.M, s.N, s.K) not in correct]
    print(f"shapes without a correct kernel: {len(uncovered)} {uncovered[:10]}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:] or sorted(FAMILIES))
