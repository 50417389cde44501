"""Evaluations per second of sweep runs, from their archives: (evaluations - 1) / (last - first
evaluation's time), so start-up (GPU processes, a Dask cluster, peaks) is not counted; wall time
is given beside. Prints a table and the ratio of each run to the first.

    python3 benchmarks/cluster/throughput.py LABEL=ARCHIVE:WALL_S ...
"""
import sys
from datetime import datetime

from evo.archive import Archive


def rate(path: str) -> tuple[int, float, int]:
    a = Archive.open(path, readonly=True)
    rows = list(a.db.query("select created_at, gpu from evaluations order by id"))
    a.close()
    times = [datetime.fromisoformat(r["created_at"]).timestamp() for r in rows]
    span = max(times) - min(times) if len(times) > 1 else 0.0
    return len(rows), (len(rows) - 1) / span if span else 0.0, len({r["gpu"] for r in rows if r["gpu"]})


def main(args: list[str]) -> None:
    out, base = [], None
    for arg in args:
        label, rest = arg.split("=", 1)
        path, wall = rest.rsplit(":", 1)
        n, per_s, gpus = rate(path)
        base = base or per_s
        out.append(f"{label:<22} {gpus:>4} {n:>6} {per_s:>10.2f} {n / float(wall):>10.2f} {per_s / base:>7.2f}x")
    print(f"{'run':<22} {'GPUs':>4} {'evals':>6} {'evals/s':>10} {'wall /s':>10} {'vs first':>8}")
    print("\n".join(out))


if __name__ == "__main__":
    main(sys.argv[1:])
