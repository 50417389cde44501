"""Narrow transposed tiles above M = 64 (issue 13): on the shapes where a sweep's best is below the best
library and 64x64 tiles are too few to fill the GPU twice, the sweep's winner against hopper kernels with
32- or 48-row tiles (SWAP_AB=1, BN=64 or 128: the wgmma's 64-row side runs along N) and the split-K that
brings the work items nearest one or two waves. Why: on session 28's H100, cuBLASLt's recorded algorithm on
such shapes (1024x256x4096 at 0.82, 256x1024x4096, 4096x64x4096) is a 32-row by 64-column tile with K
unsplit, 128 CTAs; the shortlist offers transposed narrow tiles only at M <= 64, and none of them was timed
above it.

Every kernel and the libraries are timed in one evaluator run (3 replays of 10 ms, 2 correctness draws, no
racing), lowest-ratio shapes first. Prints per shape the winner, the best narrow variant and its genes, the
library; writes rows.json.

    python benchmarks/session29/narrow_ab.py SWEEP.sqlite [SWEEP.sqlite ...] --out /tmp/narrow --budget-s 200
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session14"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "session24"))
from deep_ab import harness_args, times_side_by_side  # noqa: E402
from pingpong_ab import sweep_shapes  # noqa: E402

from evo.core.summary import geomean  # noqa: E402
from evo.families import FAMILIES  # noqa: E402
from evo.families._family import ANY_SPLITS  # noqa: E402
from evo.families.hopper import deepest_fitting  # noqa: E402

HOPPER = FAMILIES["hopper"]
NUM_SMS = 132


def narrow_variants(shape) -> list[dict]:
    """Transposed 32/48-row tiles, BN 64 or 128, at the split-K nearest one and two waves of work items."""
    found = []
    for bm in (32, 48):
        for bn in (64, 128):
            tiles = -(-shape.M // bm) * -(-shape.N // bn)
            k_steps = -(-shape.K // 64)
            splits = sorted({min((s for s in ANY_SPLITS if s <= k_steps // 4 or s == 1),
                                 key=lambda s: abs(tiles * s - waves * NUM_SMS)) for waves in (1, 2)})
            for s in splits:
                for per_sm in ((1, 2) if tiles * s > NUM_SMS else (1,)):
                    p = dict(HOPPER.default, BM=bm, BN=bn, CONSUMERS=1, SWAP_AB=1, GROUP_M=8, SPLIT_K=s,
                             FIXUP=0, CTAS_PER_SM=per_sm, STAGES=13)
                    q = deepest_fitting(p, 13)
                    if q is not None and q not in found:
                        found.append(q)
    return found


def main() -> None:
    ap = harness_args(__doc__, "/tmp/narrow")
    ap.add_argument("sweeps", nargs="+")
    ap.add_argument("--below", type=float, default=0.97, help="shapes whose sweep ratio is below this")
    ap.add_argument("--max-shapes", type=int, default=0, help="only the first N shapes, lowest ratio first (0: all)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = sorted((r for path in args.sweeps for r in sweep_shapes(path)
                   if r[0] < args.below and r[1].M > 64 and -(-r[1].M // 64) * -(-r[1].N // 64) < 2 * NUM_SMS
                   and r[1].K >= 512), key=lambda r: r[0])[:args.max_shapes or None]
    jobs, role = [], {}
    for _, shape, family, winner in rows:
        w = FAMILIES[family].candidate(winner)
        cands = [(w, "winner")] + [(HOPPER.candidate(p), "narrow") for p in narrow_variants(shape)]
        for c, r in cands:
            if (c.id, shape) not in role and c.declaration.supports(shape, num_sms=NUM_SMS):
                role[(c.id, shape)] = r
                jobs.append((c, shape))
    print(f"{len(rows)} shapes, {len(jobs)} evaluations", flush=True)
    params = {c.id: c.params for c, _ in jobs}
    times, lib = times_side_by_side(jobs, out / "narrow.sqlite", "narrow_ab.py", args)
    print(f"{'shape':<18} {'sweep':>6} {'winner':>8} {'narrow':>8} {'library':>8} (us)  winner/narrow  narrow genes")
    table = []
    for ratio, shape, _, _ in rows:
        mine = {(kid, role[(kid, s)]): t for (kid, s), t in times.items() if s == shape and t}
        won = [t for (kid, r), t in mine.items() if r == "winner"]
        narrow = sorted((t, kid) for (kid, r), t in mine.items() if r == "narrow")
        if not won or not narrow:
            continue
        t_n, kid = narrow[0]
        p = params[kid]
        genes = f"BM={p['BM']} BN={p['BN']} SPLIT_K={p['SPLIT_K']} CTAS_PER_SM={p['CTAS_PER_SM']} STAGES={p['STAGES']}"
        lib_ms = lib.get(shape) or 0
        print(f"{str(shape):<18} {ratio:6.3f} {won[0] * 1e3:8.2f} {t_n * 1e3:8.2f} {lib_ms * 1e3:8.2f}"
              f"       {won[0] / t_n:6.3f}      {genes}")
        table.append({"shape": str(shape), "sweep_ratio": ratio, "library_ms": lib_ms or None,
                      "winner_ms": won[0], "narrow_ms": t_n, "narrow_params": p,
                      "all_narrow": [{"ms": t, "params": params[k]} for t, k in narrow]})
    (out / "rows.json").write_text(json.dumps(table, indent=1))
    if table:
        print(f"\n{len(table)} shapes: winner / best narrow geomean "
              f"{geomean([r['winner_ms'] / r['narrow_ms'] for r in table]):.3f}; narrow faster on "
              f"{sum(r['narrow_ms'] < r['winner_ms'] for r in table)}")
        with_lib = [r for r in table if r["library_ms"]]
        if with_lib:
            print(f"vs the best library: winner {geomean([r['library_ms'] / r['winner_ms'] for r in with_lib]):.3f}, "
                  f"best of both {geomean([r['library_ms'] / min(r['winner_ms'], r['narrow_ms']) for r in with_lib]):.3f}")


if __name__ == "__main__":
    main()
