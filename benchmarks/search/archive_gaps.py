"""Generation-boundary gaps of finished searches, from their archives' timestamps (no GPU needed).

    python benchmarks/search/archive_gaps.py ARCHIVE...

A gap is the time from a generation's last evaluation row to the next generation's first: what the
GPUs waited while the search folded results, saved, planned, screened and compiled the next children.
Prints per archive the boundaries, the gaps' sum and share of the span of all evaluations, and their
median and maximum.
"""
from __future__ import annotations

import statistics
import sys
from datetime import datetime

from evo.archive import Archive


def generation_gaps(path: str) -> tuple[list[float], float]:
    """The gaps (seconds) between consecutive generations, and the span of all evaluations."""
    a = Archive.open(path, readonly=True)
    rows = list(a.db.query("select generation, min(created_at) as first, max(created_at) as last "
                           "from evaluations group by generation order by generation"))
    a.close()
    when = [(datetime.fromisoformat(r["first"]).timestamp(), datetime.fromisoformat(r["last"]).timestamp())
            for r in rows]
    gaps = [nxt[0] - cur[1] for cur, nxt in zip(when, when[1:])]
    return gaps, when[-1][1] - when[0][0] if when else 0.0


def main(paths: list[str]) -> None:
    print(f"{'archive':<40} {'gaps':>5} {'sum s':>7} {'span s':>7} {'share':>6} {'median s':>9} {'max s':>6}")
    for path in paths:
        gaps, span = generation_gaps(path)
        if not gaps:
            print(f"{path:<40} no generation boundary")
            continue
        print(f"{path:<40} {len(gaps):>5} {sum(gaps):>7.1f} {span:>7.1f} {sum(gaps) / span:>6.0%} "
              f"{statistics.median(gaps):>9.2f} {max(gaps):>6.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
