"""What the ping-pong shortlist rule (hopper._pingpong_beside) would change, estimated from measurements
already made (no GPU): for every shape of session 23's grid125 and llm_layers sweeps, the 24-pick shortlist
plan `evo sweep` would now time; whether it holds a ping-pong pick; whether session 23's winner is still in
it; and, where this session's A/B timed both the winner and the rule's ping-pong pick side by side
(pingpong/pingpong.sqlite.gz), the gain best(winner, ping-pong) / winner. Applied to session 23's ratios,
the grid125 geomean and buckets it implies. An estimate: the rule was written from the same pairs, and
session 23's ratios come from another run.

    python benchmarks/session25/list_estimate.py      # from the repository root
"""
from __future__ import annotations

import gzip
import math
import random
import shutil
import sqlite3
import tempfile
from pathlib import Path

from evo.core.shapes import Shape
from evo.search.sweep import plan

HERE = Path(__file__).resolve().parent
FAMILIES = ["hopper", "ampere", "skinny"]


def unpacked(path: Path, folder: str) -> sqlite3.Connection:
    plain = Path(folder) / path.name.removesuffix(".gz")
    with gzip.open(path) as src, open(plain, "wb") as dst:
        shutil.copyfileobj(src, dst)
    return sqlite3.connect(plain)


def geomean(v: list[float]) -> float:
    return math.exp(sum(map(math.log, v)) / len(v))


def bucket(gflop: float) -> str:
    return "<1" if gflop < 1 else "1-10" if gflop < 10 else "10-100" if gflop < 100 else "100-1000" if gflop < 1000 else ">=1000"


def best(db: sqlite3.Connection, shape: Shape, kernel: str | None = None) -> tuple[float, str] | None:
    sql = "select min(time_ms), kernel_id from evaluations where M = ? and N = ? and K = ? and status = 'ok'"
    args: list = [shape.M, shape.N, shape.K]
    if kernel:
        sql, args = sql + " and kernel_id = ?", args + [kernel]
    row = db.execute(sql, args).fetchone()
    return (row[0], row[1]) if row and row[0] else None


def library(db: sqlite3.Connection, shape: Shape) -> float | None:
    return db.execute("select min(time_ms) from baselines where M = ? and N = ? and K = ? and status = 'ok'",
                      (shape.M, shape.N, shape.K)).fetchone()[0]


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ab = unpacked(HERE / "pingpong" / "pingpong.sqlite.gz", tmp)
        for name in ("grid125", "llm_layers"):
            db = unpacked(HERE.parent / "session23" / name / f"{name}.sqlite.gz", tmp)
            shapes = [Shape(*r) for r in db.execute("select distinct M, N, K from evaluations order by M, N, K")]
            ratios, estimated, offered, displaced, gains = {}, {}, 0, [], []
            for s in shapes:
                won, lib = best(db, s), library(db, s)
                if not won or not lib:
                    continue
                ratios[s] = estimated[s] = lib / won[0]
                picks = plan(FAMILIES, s, budget=24, sample="shortlist", rng=random.Random(0), num_sms=132)
                pingpong = [c for c in picks if c.params and c.params.get("PINGPONG")]
                if not pingpong:
                    continue
                offered += 1
                if won[1] not in {c.id for c in picks}:
                    displaced.append(str(s))
                winner_here, pp_here = best(ab, s, won[1]), best(ab, s, pingpong[0].id)
                if winner_here and pp_here:
                    gain = winner_here[0] / min(winner_here[0], pp_here[0])
                    gains.append(gain)
                    estimated[s] *= gain
                    print(f"  {str(s):<18} ping-pong / winner {winner_here[0] / pp_here[0]:.3f}")
            print(f"{name}: {len(shapes)} shapes, {offered} plans hold a ping-pong pick, session 23's winner pushed "
                  f"out of the 24 picks on {len(displaced)} {displaced}; both timed in the A/B on {len(gains)}: "
                  f"best / winner {geomean(gains) if gains else float('nan'):.4f}")
            for label, r in (("session 23", ratios), ("estimated", estimated)):
                buckets: dict[str, list[float]] = {}
                for s, x in r.items():
                    buckets.setdefault(bucket(2 * s.M * s.N * s.K / 1e9), []).append(x)
                print(f"  {label:<11} geomean {geomean(list(r.values())):.4f}  "
                      + "  ".join(f"{k} {geomean(v):.3f} ({len(v)})" for k, v in buckets.items()))


if __name__ == "__main__":
    main()
