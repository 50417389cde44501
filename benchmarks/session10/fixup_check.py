"""Does the ordered fix-up (FIXUP=1: every partial tile in a workspace tile of its own, added in order by
the CTA that arrives last, as stream-K does) beat fp32 atomics (FIXUP=0) for split-K over L2 and the
tail split? On each llm_layers shape, the first PAIRS shortlist picks (of the first PICKS) that reduce
over L2 are timed both ways, libraries in the same run; pairs are interleaved so that clocks drift alike.
`python3 fixup_check.py [SET] [PICKS] [PAIRS]` on a GPU machine (defaults llm_layers 8 2); one line per
(shape, configuration) as it is measured, the same format as the stream-K checks."""
import os
import re
import sys
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # benchmarks/hopper_check.py
from hopper_check import time_configs  # noqa: E402

from evo.core.shapes import Shape  # noqa: E402
from evo.families import HOPPER  # noqa: E402

CONF = Path(__file__).resolve().parents[2] / "conf" / "shapes"


def reduces_over_l2(p: dict) -> bool:
    return p["TAIL_SPLIT"] > 1 or (p["SPLIT_K"] > 1 and not p["SPLIT_CLUSTER"])


def main() -> None:
    name = sys.argv[1] if len(sys.argv) > 1 else "llm_layers"
    picks, pairs = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (8, 2)
    shapes = [Shape.parse(s) for s in re.findall(r"\b(\d+x\d+x\d+)\b", (CONF / f"{name}.yaml").read_text())]
    cases = []
    for shape in shapes:
        chosen = [p for p in HOPPER.suggest(shape.M, shape.N, shape.K, limit=picks) if reduces_over_l2(p)][:pairs]
        configs = [HOPPER.complete(dict(p, FIXUP=f)) for p in chosen for f in (0, 1)]
        if configs:
            cases.append((shape, [p for p in configs if HOPPER.problem(p) is None]))
    time_configs(cases, operator="fixup_check")


if __name__ == "__main__":
    main()
