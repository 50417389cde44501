"""The tables of session10/README.md from a fix-up check's log (`fixup_check.py`, run_a/checks.log):
pairs of lines with the same shape whose labels differ by a trailing " ord" (FIXUP=1), speed of the
ordered fix-up over the atomics (atomic time / ordered time) by the pick's split-K or tail-split cap,
and the per-shape best with the ordered variants beside the atomic ones.
`python3 fixup_pairs.py [LOG]` (default: run_a/checks.log beside this script)."""
import math
import re
import sys
from collections import defaultdict
from pathlib import Path

LINE = re.compile(r"\s*(\d+x\d+x\d+) (.+?)\s+ok\s+([\d.]+) us")  # labels may run into the status column


def geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs))


def main() -> None:
    log = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("run_a") / "checks.log"
    text = log.read_text()
    text = text[text.index("== FIXUP"):] if "== FIXUP" in text else text
    times = {(m[1], m[2].strip()): float(m[3]) for m in map(LINE.match, text.splitlines()) if m}
    groups: dict[tuple[str, int], list[float]] = defaultdict(list)
    for (shape, label), ordered in times.items():
        atomic = times.get((shape, label.removesuffix(" ord"))) if label.endswith(" ord") else None
        if atomic:
            kind, parts = re.search(r"(split|tail)(\d+)", label).groups()
            groups[(kind, int(parts))].append(atomic / ordered)
    print(f"{len(times)} correct evaluations, {sum(map(len, groups.values()))} pairs")
    print("| parts | pairs | geomean | range | faster / slower by over 1% |\n|---|---|---|---|---|")
    for (kind, parts), r in sorted(groups.items()):
        name = f"split-K {parts}" if kind == "split" else f"tail split, cap {parts}"
        print(f"| {name} | {len(r)} | {geomean(r):.3f} | {min(r):.3f}-{max(r):.3f} | "
              f"{sum(x > 1.01 for x in r)} / {sum(x < 0.99 for x in r)} |")
    shapes = {s for s, _ in times}
    best = [min(t for (s, lab), t in times.items() if s == shape and not lab.endswith(" ord"))
            / min(t for (s, _), t in times.items() if s == shape) for shape in shapes]
    print(f"per-shape best with the ordered variants / without: {geomean(best):.4f} over {len(best)} shapes, "
          f"{sum(x > 1.01 for x in best)} faster by over 1%")


if __name__ == "__main__":
    main()
