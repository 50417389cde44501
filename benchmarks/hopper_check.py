"""Time hopper configurations on chosen shapes beside the libraries, in one run on one GPU: one line per
(shape, configuration) as it is measured (status, median time, speedup over the best library, max
relative error). Used by the sessions' stream-K checks (`benchmarks/session8/streamk_check.py`,
`benchmarks/session9/streamk2_check.py`) and the fix-up check (`benchmarks/session10/fixup_check.py`)."""
import time

from evo.config import EvaluatorConfig
from evo.core.shapes import Shape
from evo.evaluation.evaluator import Evaluator
from evo.families import HOPPER
from evo.families._family import Params


def label(p: Params) -> str:
    """128x256/2 st4 [swap] [SK or SK2] [splitN[cl]] [tailN] [ord]: tile, consumers, stages and the schedule
    genes (cl: cluster split-K; ord: FIXUP=1)."""
    sk = {0: "", 1: " SK", 2: " SK2"}[p["STREAM_K"]]
    split = (f" split{p['SPLIT_K']}" + ("cl" if p["SPLIT_CLUSTER"] else "")) if p["SPLIT_K"] > 1 else ""
    return (f"{p['BM']}x{p['BN']}/{p['CONSUMERS']} st{p['STAGES']}" + (" swap" if p["SWAP_AB"] else "") + sk
            + split + (f" tail{p['TAIL_SPLIT']}" if p["TAIL_SPLIT"] > 1 else "") + (" ord" if p.get("FIXUP") else ""))


def time_configs(cases: list[tuple[Shape, list[Params]]], operator: str) -> None:
    ev = Evaluator(EvaluatorConfig(backend="gpu", draws=2, replays=3, target_replay_ms=10, timeout_s=30)).start()
    num_sms = ev.devices[0].num_sms
    pairs, names = [], {}
    for shape, configs in cases:
        for p in configs:
            cand = HOPPER.candidate(p, operator=operator)
            if cand.declaration.supports(shape, num_sms=num_sms):
                names[(cand.id, shape)] = label(p)
                pairs.append((cand, shape))
    print(f"{len(pairs)} checks on {ev.devices[0].key}", flush=True)
    start = time.time()
    for e in ev.evaluate(pairs):
        t = next((x.median_ms for x in e.timings), None) if e.ok else None
        print(f"{str(e.shape):>16} {names[(e.kernel_id, e.shape)]:<40} {str(e.status):<14} "
              f"{t * 1e3 if t else float('nan'):9.2f} us  vs best lib {e.speedup or 0:.3f}  "
              f"rel err {e.max_rel_err if e.max_rel_err is not None else float('nan'):.1e}  {e.error[:120]}", flush=True)
    print(f"done in {time.time() - start:.0f}s")
    ev.close()
