"""A hang on one GPU must not stall the other: evaluator.cluster=local on a two-GPU machine.

One hanging kernel (the self-test's bad_hang.cu) goes first, then good Ampere configurations on
1024^3. The hang holds its GPU until the stage timeout kills its GPU process; meanwhile every good
evaluation must finish on the other GPU. Prints one row per evaluation (seconds since the start,
status, GPU) and a verdict line; exits 1 when the verdict fails.

    python3 benchmarks/cluster/hang_isolation.py [CLUSTER]     # CLUSTER: local (default) or tcp://...
"""
import sys
import time

from evo.config import EvaluatorConfig
from evo.core.kernel import Candidate
from evo.core.shapes import Shape
from evo.evaluation.evaluator import Evaluator
from evo.evaluation.selftest import SMALL, kernel_source
from evo.families import FAMILIES

TIMEOUT_S = 30


def main(cluster: str) -> int:
    cfg = EvaluatorConfig(backend="gpu", timeout_s=TIMEOUT_S, draws=1, replays=3, target_replay_ms=5,
                          libraries=["torch"], cluster=cluster)
    ev = Evaluator(cfg).start()
    try:
        gpus = {d.key for d in ev.devices}
        print(f"{len(gpus)} GPU(s): {sorted(gpus)}")
        hang = Candidate.make(kernel_source("bad_hang.cu"), operator="selftest")
        shape = Shape(1024, 1024, 1024)
        fam = FAMILIES["ampere"]
        goods = [c for c in (fam.candidate(p) for p in fam.all_valid) if c.declaration.supports(shape)][:16]
        pairs = [(hang, SMALL)] + [(g, shape) for g in goods]
        for cand, _ in pairs:  # compile first: only the GPUs are measured
            ev.prepare(cand).result()
        start = time.monotonic()
        rows = [(time.monotonic() - start, e.kernel_id == hang.id, str(e.status), e.gpu) for e in ev.evaluate(pairs)]
    finally:
        ev.close()
    for t, is_hang, status, gpu in rows:
        print(f"{t:7.2f} s  {'HANG' if is_hang else 'good'}  {status:<10} {gpu}")
    (hang_row,) = [r for r in rows if r[1]]
    good = [r for r in rows if not r[1]]
    ok = (len(gpus) >= 2 and hang_row[2] == "timeout" and all(r[2] == "ok" for r in good)
          and all(r[0] < hang_row[0] for r in good) and all(r[3] != hang_row[3] for r in good))
    print(f"verdict: {'PASS' if ok else 'FAIL'}: the hang came back as {hang_row[2]} after {hang_row[0]:.1f} s; "
          f"{sum(r[2] == 'ok' for r in good)}/{len(good)} good evaluations ok, the last at "
          f"{max(r[0] for r in good):.1f} s, all on the other GPU: {all(r[3] != hang_row[3] for r in good)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "local"))
