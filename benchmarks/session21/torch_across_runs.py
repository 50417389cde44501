"""Session 21: torch's time per shape in every archive of sessions 16-21 (sweeps, benches, pair runs; many
processes, several machines), to see how often a library's time depends on the run it was timed in. For
each shape timed in at least 3 archives: the slowest / fastest ratio, and the archives' times in order.
Only unthrottled, correct rows.

    python benchmarks/session21/torch_across_runs.py [--library torch] [--show 25]
"""
import argparse
import gzip
import lzma
import sqlite3
import tempfile
from collections import defaultdict
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]


def archives():
    for session in ("session16", "session17", "session18", "session19", "session20", "session21"):
        for path in sorted((BENCH / session).rglob("*.sqlite.*")):
            opener = lzma.open if path.suffix == ".xz" else gzip.open if path.suffix == ".gz" else None
            if opener is not None:
                yield path.relative_to(BENCH), opener


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--library", default="torch")
    ap.add_argument("--show", type=int, default=25)
    a = ap.parse_args()
    times = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        for rel, opener in archives():
            db_path = Path(tmp) / "a.sqlite"
            with opener(BENCH / rel) as f:
                db_path.write_bytes(f.read())
            db = sqlite3.connect(db_path)
            try:
                rows = db.execute("select M, N, K, time_ms from baselines where library = ? and status = 'ok' "
                                  "and not coalesce(throttled, 0)", (a.library,)).fetchall()
            except sqlite3.Error:
                rows = []
            db.close()
            for m, n, k, ms in rows:
                times[(m, n, k)].append((ms * 1e3, str(rel.parent)))
    multi = {s: sorted(v) for s, v in times.items() if len(v) >= 3}
    spread = sorted(((v[-1][0] / v[0][0], s, v) for s, v in multi.items()), reverse=True)
    print(f"{a.library}: {len(times)} shapes timed, {len(multi)} in at least 3 archives; slowest / fastest "
          f"above 1.05 on {sum(r > 1.05 for r, _, _ in spread)}, above 1.10 on {sum(r > 1.10 for r, _, _ in spread)}")
    print("ratio  shape  slowest - fastest (us)  archives' times (us)")
    for r, s, v in spread[:a.show]:
        print(f"{r:.3f}  {'x'.join(map(str, s))}  {v[-1][0] - v[0][0]:.2f}  "
              + ", ".join(f"{t:.2f} {name}" for t, name in v))


if __name__ == "__main__":
    main()
