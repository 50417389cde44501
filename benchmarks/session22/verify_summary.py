"""Session 22, for the next GPU session: an export's re-check read as the user sees it.

`evo export ARCHIVE --out DIR --verify` times, in a plain process (no evo worker; torch.ops.evo.matmul as a
model calls it), every range whose recorded speedup passed at its lowest, middle and highest M beside
torch.matmul, replays interleaved (evo.dispatch.verify). The highest M of a range is the archive shape
the kernel won. Printed per range: the sweep's recorded speedup over torch at that shape and the
re-check's there, their ratio, and the geomean over ranges: how much of a sweep's win over torch survives
outside evo's worker (both sides in whatever mode a plain process runs them).

    python benchmarks/session22/verify_summary.py DIR/manifest.json
"""
import json
import math
import sys


def main() -> None:
    manifest = json.load(open(sys.argv[1]))
    rows, unchecked = [], 0
    for table in manifest.get("tables", []):
        for rng in table.get("ranges", []):
            check = rng.get("check")
            if check is None:
                unchecked += rng.get("recorded_speedup") is not None and rng.get("recorded_speedup", 0) > 1
                continue
            at_won = [p for p in check.get("points", []) if p["M"] == rng["tuned_M"]]
            shape = f"{rng['tuned_M']}x{table['N']}x{table['K']}"
            if not at_won:
                print(f"{shape:<18} recorded {rng['recorded_speedup']:.3f}  not timed at its own M ({rng['reason']})")
                continue
            now = at_won[0]["speedup"]
            rows.append((now / rng["recorded_speedup"], shape, rng["recorded_speedup"], now, rng["use"]))
    for ratio, shape, recorded, now, use in sorted(rows):
        print(f"{shape:<18} recorded {recorded:.3f}  re-checked {now:.3f}  ratio {ratio:.3f}  "
              f"{'used' if use else 'not used'}")
    if rows:
        g = lambda xs: math.exp(sum(map(math.log, xs)) / len(xs))  # noqa: E731
        print(f"{len(rows)} ranges re-checked at their own shape: recorded speedup over torch geomean "
              f"{g([r[2] for r in rows]):.3f}, re-checked {g([r[3] for r in rows]):.3f} "
              f"(ratio {g([r[0] for r in rows]):.3f}); {sum(r[4] for r in rows)} still used")
    else:
        print("no range was re-checked on a GPU (export without --verify, or no recorded speedup above 1)")
    if unchecked:
        print(f"{unchecked} ranges with a recorded speedup above 1 carry no re-check")


if __name__ == "__main__":
    main()
