"""First GPU check of hopper's STREAM_K gene: correctness and time of stream-K kernels beside the same
tiles without it (and with a tail split), libraries in the same run, on shapes whose last round leaves
SMs idle or whose few tiles meet a long K. `python3 streamk_check.py` on a GPU machine; one line per
(shape, configuration) as it is measured."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # benchmarks/hopper_check.py
from hopper_check import time_configs  # noqa: E402

from evo.core.shapes import Shape  # noqa: E402
from evo.families import HOPPER  # noqa: E402

SHAPES = [Shape(512, 10240, 8192), Shape(640, 8192, 8192), Shape(1024, 256, 4096), Shape(256, 1024, 4096),
          Shape(1024, 256, 16384), Shape(255, 2816, 2048), Shape(257, 9216, 3072), Shape(1000, 1000, 1000),
          Shape(4097, 4104, 136), Shape(1, 4096, 4096), Shape(77, 4096, 14336), Shape(3000, 4096, 4096)]
TILES = [dict(BM=128, BN=256, CONSUMERS=2, STAGES=4), dict(BM=128, BN=128, CONSUMERS=1, STAGES=6),
         dict(BM=64, BN=256, CONSUMERS=1, STAGES=5)]


def configs(shape: Shape) -> list[dict]:
    out = []
    for tile in TILES:
        base = dict(HOPPER.default, **tile)
        out += [base, dict(base, STREAM_K=1), dict(base, TAIL_SPLIT=4)]
    if shape.M <= 512:  # the transposed product's tile rows: M in 1-2 tiles of a multiple of 8
        bm = min(256, -(-shape.M // (1 if shape.M <= 256 else 2)) // 8 * 8 + (8 if shape.M % 8 else 0))
        swapped = dict(HOPPER.default, SWAP_AB=1, BM=max(8, bm), BN=128, STAGES=5)
        out += [swapped, dict(swapped, STREAM_K=1)]
    return [HOPPER.complete(p) for p in out if HOPPER.problem(HOPPER.complete(p)) is None]


def main() -> None:
    time_configs([(shape, configs(shape)) for shape in SHAPES], operator="streamk_check")


if __name__ == "__main__":
    main()
