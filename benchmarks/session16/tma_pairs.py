"""The TMA store pairs of this session (tma/tma/pairs.json and tma/tma/k256/pairs.json, written by
session14/deep_ab.py --variant tma_store): each pair is one shortlist pick and the same pick storing C
through TMA, timed side by side in one run; "ratio" is the pick's time over the variant's (> 1: the TMA
store is faster). Prints the geomean ratio by loop length (k-steps a work item) and tile size, then by
staging tiles and CTAs per SM (items of at most 4 k-steps), then by output size and tile count (two
staging tiles, at most 4 k-steps): the tables behind hopper._tma_store_where_it_pays.
    python3 benchmarks/session16/tma_pairs.py"""
import json
import math
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
NUM_SMS = 132


def geomean(v):
    return math.exp(sum(map(math.log, v)) / len(v))


def table(title, groups):
    print(f"\n{title}\n{'group':<44} {'pairs':>5} {'geomean':>8} {'min':>6} {'max':>6} {'slower by >2%':>13}")
    for key in sorted(groups):
        v = groups[key]
        print(f"{', '.join(key):<44} {len(v):>5} {geomean(v):>8.3f} {min(v):>6.3f} {max(v):>6.3f} "
              f"{sum(x < 0.98 for x in v):>13}")


pairs = [r for f in ("tma/tma/pairs.json", "tma/tma/k256/pairs.json") for r in json.loads((HERE / f).read_text())]
by_loop, by_store, by_size = defaultdict(list), defaultdict(list), defaultdict(list)
for r in pairs:
    M, N, K = map(int, r["shape"].split("x"))
    b, (tiles_staged, stages) = r["base"], r["stages"]
    k_steps = K // 64 // max(1, b["SPLIT_K"])
    loop = "<= 4" if k_steps <= 4 else "<= 16" if k_steps <= 16 else "<= 64" if k_steps <= 64 else "> 64"
    by_loop[(f"k-steps {loop}", "BM*BN >= 128x128" if b["BM"] * b["BN"] >= 16384 else "smaller tile")].append(r["ratio"])
    if k_steps > 4:
        continue
    same = "same stages" if stages == b["STAGES"] else "fewer stages"
    by_store[(f"{tiles_staged} staging tile(s), {same}", f"{b['CTAS_PER_SM']} CTA(s) an SM")].append(r["ratio"])
    if tiles_staged == 2:
        tiles = -(-M // b["BM"]) * -(-N // b["BN"])
        by_size[("M x N >= 1M" if M * N >= 1 << 20 else "M x N < 1M",
                 f"tiles > {NUM_SMS}" if tiles > NUM_SMS else f"tiles <= {NUM_SMS}")].append(r["ratio"])
print(f"{len(pairs)} pairs; ratio = the pick's time / the same pick with the TMA store")
table("by loop length and tile", by_loop)
table("at most 4 k-steps: by staging tiles and CTAs per SM", by_store)
table("at most 4 k-steps, two staging tiles: by output size and tile count", by_size)
