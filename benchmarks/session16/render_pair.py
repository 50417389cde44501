"""Render a hopper configuration as SHAPE-less .cu files, one without and one with the TMA store, for
profile_next.sh: the pair whose main loop ran about 20% slower with the TMA store (64x64 tiles, one
consumer, 13 stages, no split: 34.4 us against 41.8 us on 64x64x16384, this session's tma/tma/pairs.json).

    python benchmarks/session16/render_pair.py --out /tmp/prof/pair
"""
import argparse
from pathlib import Path

from evo.families import FAMILIES

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("--out", required=True)
args = ap.parse_args()
out = Path(args.out)
out.mkdir(parents=True, exist_ok=True)
fam = FAMILIES["hopper"]
base = dict(fam.default, BM=64, BN=64, CONSUMERS=1, STAGES=13, SPLIT_K=1, CTAS_PER_SM=1, TMA_STORE=0)
for name, params in (("plain", base), ("tma2", dict(base, TMA_STORE=2))):
    problem = fam.problem(params)
    if problem:
        raise SystemExit(f"{name}: {problem}")
    (out / f"{name}.cu").write_text(fam.render(params))
    print(f"{name}: {fam.candidate(params).id[:12]} -> {out / (name + '.cu')}")
