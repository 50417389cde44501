"""Tail split A/B on the GPU: the same hopper tiles with TAIL_SPLIT 1 (none), 2, 4 and 16 (a cap: the
kernel splits each last-round tile into min(TAIL_SPLIT, SMs / last-round tiles) parts), plus atomic
split-K where the tiles do not fill one round, all timed by evo's evaluator in one run with the
libraries beside (through `evo sweep`'s machinery, its plan replaced by this fixed one).
  python3 benchmarks/session6/tail_ab.py ARCHIVE.sqlite [hydra overrides...]
Prints per shape and tile the time of each TAIL_SPLIT, and what the kernel makes of it."""
import sys

from evo.cli.hydra_app import compose
from evo.families import FAMILIES
from evo.families.hopper import _fit_stages, tail_parts
from evo.search import sweep

SHAPES = ["512x10240x8192", "640x8192x8192", "100x18432x2304", "2049x14336x4096", "1500x3584x3584",
          "769x3584x18944", "257x28672x4096", "1000x14336x4096"]
TILES = ((128, 256, 2), (128, 128, 2), (64, 256, 1), (64, 128, 1))
CAPS = (1, 2, 4, 16)


def fixed_plan(families, shape, *, budget, sample, rng, num_sms):
    hopper = FAMILIES["hopper"]
    out = []
    for bm, bn, consumers in TILES:
        for cap in CAPS:
            p = _fit_stages(dict(hopper.default, BM=bm, BN=bn, CONSUMERS=consumers, TAIL_SPLIT=cap))
            if p is not None:
                cand = hopper.candidate(p, operator="tail_ab")
                if cand.declaration.supports(shape, num_sms=num_sms):
                    out.append(cand)
    return out


def main(archive: str, overrides: list[str]) -> None:
    sweep.plan = fixed_plan
    c, raw = compose([f"shapes.list=[{','.join(SHAPES)}]", "sweep.budget=64", "search.progress=false",
                      f"archive.path={archive}", *overrides])
    sweep.run_sweep(c, raw, families=["hopper"])
    import json
    import sqlite3
    db = sqlite3.connect(archive)
    rows = db.execute("select e.M, e.N, e.K, e.time_ms, e.best_library_ms, k.params_json from evaluations e "
                      "join kernels k on k.id = e.kernel_id where e.status = 'ok'").fetchall()
    table: dict = {}
    for M, N, K, ms, lib, params in rows:
        p = json.loads(params)
        table.setdefault((M, N, K, lib), {}).setdefault((p["BM"], p["BN"], p["CONSUMERS"], p["STAGES"]), {})[
            p["TAIL_SPLIT"]] = ms
    for (M, N, K, lib), tiles in sorted(table.items()):
        print(f"{M}x{N}x{K}: best library {lib * 1e3:.1f} us")
        for (bm, bn, consumers, stages), times in sorted(tiles.items()):
            t = -(-M // bm) * -(-N // bn)
            cells = "  ".join(f"cap {cap:2}: {times[cap] * 1e3:7.1f} us ({times[cap] / times[1]:.3f})"
                              for cap in CAPS if cap in times and 1 in times)
            print(f"  {bm}x{bn}/{consumers} st{stages} {t} tiles = {t // 132} rounds + {t % 132} "
                  f"(parts at cap 16: {tail_parts(t, 132)}): {cells}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
