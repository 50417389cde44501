"""First GPU check of hopper's STREAM_K gene: correctness and time of stream-K kernels beside the same
tiles without it (and with a tail split), libraries in the same run, on shapes whose last round leaves
SMs idle or whose few tiles meet a long K. `python3 streamk_check.py` on a GPU machine; one line per
(shape, configuration) as it is measured."""
import time

from evo.config import EvaluatorConfig
from evo.core.shapes import Shape
from evo.evaluation.evaluator import Evaluator
from evo.families import HOPPER

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
    ev = Evaluator(EvaluatorConfig(backend="gpu", draws=2, replays=3, target_replay_ms=10, timeout_s=30)).start()
    num_sms = ev.devices[0].num_sms
    pairs, names = [], {}
    for shape in SHAPES:
        for p in configs(shape):
            cand = HOPPER.candidate(p, operator="streamk_check")
            if cand.declaration.supports(shape, num_sms=num_sms):
                names[(cand.id, shape)] = (f"{p['BM']}x{p['BN']}/{p['CONSUMERS']} st{p['STAGES']}"
                                           + (" swap" if p["SWAP_AB"] else "") + (" SK" if p["STREAM_K"] else "")
                                           + (f" tail{p['TAIL_SPLIT']}" if p["TAIL_SPLIT"] > 1 else ""))
                pairs.append((cand, shape))
    print(f"{len(pairs)} checks on {ev.devices[0].key}", flush=True)
    start = time.time()
    for e in ev.evaluate(pairs):
        t = next((x.median_ms for x in e.timings), None) if e.ok else None
        print(f"{str(e.shape):>16} {names[(e.kernel_id, e.shape)]:<28} {str(e.status):<14} "
              f"{t * 1e3 if t else float('nan'):9.2f} us  vs best lib {e.speedup or 0:.3f}  "
              f"rel err {e.max_rel_err if e.max_rel_err is not None else float('nan'):.1e}  {e.error[:120]}", flush=True)
    print(f"done in {time.time() - start:.0f}s")
    ev.close()


if __name__ == "__main__":
    main()
