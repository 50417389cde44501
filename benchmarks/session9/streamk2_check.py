"""Is the wider region what makes stream-K slow? STREAM_K=1 shares out the last round plus a full round
before it (where the workspace holds the partials), STREAM_K=2 the last round alone. On the shapes
where the ninth session measured stream-K losing with a 128x128 or 128x192 tile (the wider region
taken: 333x6144x4096 in run_b's compare, the others in its llm_layers sweep), and on 512x10240x8192
as a control (128x256: the two are the same kernel schedule there), time each tile plain, with
STREAM_K=1, STREAM_K=2 and the tail split, libraries in the same run.
`python3 streamk2_check.py` on a GPU machine; one line per (shape, configuration) as it is measured."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # benchmarks/hopper_check.py
from hopper_check import time_configs  # noqa: E402

from evo.core.shapes import Shape  # noqa: E402
from evo.families import HOPPER  # noqa: E402

CASES = [(Shape(333, 6144, 4096), 128), (Shape(1000, 57344, 8192), 192), (Shape(1000, 57344, 8192), 128),
         (Shape(6144, 8192, 8192), 128), (Shape(8192, 8192, 28672), 128), (Shape(3073, 37888, 3584), 128),
         (Shape(1024, 7168, 2048), 192), (Shape(769, 3584, 18944), 192), (Shape(3000, 2304, 9216), 128),
         (Shape(512, 10240, 8192), 256)]


def configs(bn: int) -> list[dict]:
    base = HOPPER.complete(dict(HOPPER.default, BM=128, BN=bn, CONSUMERS=2, STAGES=4 if bn == 256 else 5))
    out = [base, dict(base, STREAM_K=1), dict(base, STREAM_K=2), dict(base, TAIL_SPLIT=4), dict(base, TAIL_SPLIT=16)]
    return [HOPPER.complete(p) for p in out if HOPPER.problem(HOPPER.complete(p)) is None]


def main() -> None:
    time_configs([(shape, configs(bn)) for shape, bn in CASES], operator="streamk2_check")


if __name__ == "__main__":
    main()
