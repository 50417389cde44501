"""The bucket table of a shortlist sweep's archive as it stood after its first R picks per shape, for
several R: `python3 picks_table.py ARCHIVE.sqlite[.gz] 12 16 24`. A shortlist sweep evaluates rank by
rank over every shape, so a shape's first R evaluations (by archive id) are its first R picks; the
speedups are the archive's own (kernel and libraries timed in the same run), throttled ones left out as
the sweep's cells leave them out. Shapes below 0.85 are listed for the largest R."""
import sys

from evo.archive import Archive
from evo.core.shapes import Shape
from evo.core.summary import bucket_table
from evo.search.sweep import format_bucket_table


def evaluations(path):
    archive = Archive.open(path, readonly=True)  # .sqlite.gz read as it is
    rows = archive.db.execute("select M, N, K, status, coalesce(throttled, 0), speedup, roofline_fraction "
                              "from evaluations where kernel_id is not null order by id").fetchall()
    archive.close()
    per_shape: dict = {}
    for M, N, K, status, throttled, speedup, roof in rows:
        per_shape.setdefault(Shape(M, N, K), []).append((status == "ok" and not throttled, speedup, roof))
    return per_shape


def best_after(per_shape, picks):
    best = {}
    for shape, evs in per_shape.items():
        ok = [(s, r) for good, s, r in evs[:picks] if good and s]
        s, r = max(ok) if ok else (None, None)
        best[shape] = {"speedup": s, "roofline_fraction": r}
    return best


if __name__ == "__main__":
    per_shape = evaluations(sys.argv[1])
    counts = sorted({len(v) for v in per_shape.values()})
    print(f"{len(per_shape)} shapes, {sum(map(len, per_shape.values()))} evaluations "
          f"({counts[0]}-{counts[-1]} per shape)")
    for picks in map(int, sys.argv[2:]):
        print(f"\nafter the first {picks} picks per shape:")
        print(format_bucket_table(bucket_table(best_after(per_shape, picks))))
    best = best_after(per_shape, int(sys.argv[-1]))
    low = sorted((v["speedup"], str(s)) for s, v in best.items() if v["speedup"] and v["speedup"] < 0.85)
    print(f"\nbelow 0.85 after {sys.argv[-1]} picks: {len(low)}: " + ", ".join(f"{s} {x:.3f}" for x, s in low))
