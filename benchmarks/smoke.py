"""GPU smoke run: every family's default and first shortlist pick on a spread of shapes, the
libraries beside them, then the bad-kernel self-test. Usage (on the GPU machine):

    python3 benchmarks/smoke.py OUT_DIR
"""
import sys
import time
from pathlib import Path

from evo.archive import Archive
from evo.config import EvaluatorConfig
from evo.core.shapes import Shape
from evo.evaluation.evaluator import Evaluator
from evo.evaluation.selftest import run_selftest
from evo.families import FAMILIES

SHAPES = [Shape(64, 64, 64), Shape(128, 128, 256), Shape(1, 4096, 4096), Shape(77, 4096, 4096),
          Shape(1024, 1024, 1024), Shape(333, 11008, 4096), Shape(64, 64, 16384), Shape(4096, 64, 4096),
          Shape(4096, 4096, 4096), Shape(8192, 8192, 8192)]


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    archive = Archive.open(out / "smoke.sqlite")
    run = archive.start_run(kind="smoke", config={}, seed=0, backend="gpu")
    cfg = EvaluatorConfig(backend="gpu", draws=2, modes=["rotating", "hot"], replays=5, target_replay_ms=10,
                          timeout_s=20)
    ev = Evaluator(cfg, archive=archive, run_id=run)
    t0 = time.time()
    ev.start()
    info = ev.devices[0]
    print(f"device {info.key} sms={info.num_sms} l2={info.l2_bytes} smem_optin={info.smem_per_block_optin} "
          f"maxclock={info.max_sm_clock_mhz} extra={info.extra} peaks={ev.peaks(info.key)} ({time.time() - t0:.0f}s)")
    pairs = []
    for s in SHAPES:
        for name, fam in FAMILIES.items():
            picks = [fam.default] + fam.suggest(s.M, s.N, s.K, info.num_sms)[:1]
            if name == "simt" and s.flops > 1e11:
                continue
            for p in {str(p): p for p in picks}.values():
                pairs.append((fam.candidate(p), s))
    for c, _ in pairs:
        ev.prepare(c)
    print(f"{len(pairs)} evaluations", flush=True)
    for e in ev.evaluate(pairs):
        t = e.timing
        hot = next((x for x in e.timings if x.mode == "hot"), None)
        fam = next(c for c, _ in pairs if c.id == e.kernel_id)
        print(f"{str(e.shape):>16} {fam.family:>7} {str(e.status):>22} "
              f"rot={t.median_ms * 1e3 if t else 0:9.2f}us hot={hot.median_ms * 1e3 if hot else 0:9.2f}us "
              f"lib={e.best_library}:{(e.best_library_ms or 0) * 1e3:9.2f}us speedup={e.speedup or 0:6.3f} "
              f"roof={e.roofline_fraction or 0:5.3f} err={e.max_rel_err} clk={t.clock_mhz if t else 0:.0f} "
              f"thr={t.throttled if t else None} regs={e.resources.registers if e.resources else None} "
              f"params={fam.params} {e.error[:300]}", flush=True)
    print(f"families done at {time.time() - t0:.0f}s", flush=True)
    rows = run_selftest(ev)
    print(f"selftest: {sum(r['pass'] for r in rows)}/{len(rows)} pass; total {time.time() - t0:.0f}s")
    ev.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
