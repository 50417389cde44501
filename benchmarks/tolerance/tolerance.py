"""The tolerance experiment: on every shape of the 1000-shape grid, an fp32-accumulating kernel
must pass and an fp16-accumulating variant of a correct kernel must fail on the large-K shapes.

The fp16 variant is the ampere family's default with its mma.sync switched to f16 accumulators
(partial sums rounded to fp16 after every k16 step, as a kernel with f16 accumulators does).
Usage (GPU machine): python3 benchmarks/tolerance/tolerance.py OUT_DIR
"""
import csv
import sys
import time
from collections import defaultdict
from pathlib import Path

from evo.config import EvaluatorConfig
from evo.core.kernel import Candidate
from evo.core.shapes import grid_shapes
from evo.evaluation.evaluator import Evaluator
from evo.evaluation.tolerance import ELEM_ATOL_RMS, ELEM_RTOL, NORM_RTOL
from evo.families import FAMILIES

FP32_MMA = FAMILIES["ampere"].render(FAMILIES["ampere"].default)
OLD = FP32_MMA[FP32_MMA.index("__device__ __forceinline__ void mma16816"):FP32_MMA.index("extern \"C\"")]
NEW = '''__device__ __forceinline__ void mma16816(float* c, const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    // fp16 accumulation: the accumulator is held in fp16 between k16 steps
    __half2 c01 = __floats2half2_rn(c[0], c[1]), c23 = __floats2half2_rn(c[2], c[3]);
    uint32_t d0 = *reinterpret_cast<uint32_t*>(&c01), d1 = *reinterpret_cast<uint32_t*>(&c23);
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};"
                 : "+r"(d0), "+r"(d1) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    c01 = *reinterpret_cast<__half2*>(&d0); c23 = *reinterpret_cast<__half2*>(&d1);
    c[0] = __low2float(c01); c[1] = __high2float(c01); c[2] = __low2float(c23); c[3] = __high2float(c23);
}

'''
FP16_MMA = FP32_MMA.replace(OLD, NEW)


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    kernels = {"hopper_fp32acc": FAMILIES["hopper"].candidate(FAMILIES["hopper"].default),
               "ampere_fp32acc": Candidate.make(FP32_MMA, family="ampere", params=FAMILIES["ampere"].default),
               "ampere_fp16acc": Candidate.make(FP16_MMA, operator="tolerance_experiment")}
    shapes = grid_shapes([64, 128, 256, 512, 1024, 2048, 4096, 8192, 12288, 16384])
    ev = Evaluator(EvaluatorConfig(backend="gpu", draws=1, modes=[], timeout_s=60)).start()
    print(f"tolerance: normwise {NORM_RTOL:g}, elementwise {ELEM_RTOL:g}*|ref| + {ELEM_ATOL_RMS:g}*rms(ref); "
          f"{len(shapes)} shapes x {len(kernels)} kernels on {ev.devices[0].key}", flush=True)
    rows, start = [], time.time()
    names = {c.id: n for n, c in kernels.items()}
    for e in ev.evaluate([(c, s) for c in kernels.values() for s in shapes], measure_libraries=False):
        rows.append({"kernel": names[e.kernel_id], "M": e.shape.M, "N": e.shape.N, "K": e.shape.K,
                     "status": str(e.status), "rel_err": e.max_rel_err, "error": e.error[:200]})
    ev.close()
    with open(out / "tolerance.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"{len(rows)} checks in {time.time() - start:.0f}s")
    for name in kernels:
        mine = [r for r in rows if r["kernel"] == name]
        errs = [r["rel_err"] for r in mine if r["rel_err"] is not None and r["rel_err"] != float("inf")]
        fails = [r for r in mine if r["status"] != "ok"]
        print(f"{name}: {len(mine) - len(fails)}/{len(mine)} pass; rel_err min {min(errs):.2e} max {max(errs):.2e}")
        by_k = defaultdict(lambda: [0, 0, 0.0])
        for r in mine:
            b = by_k[r["K"]]
            b[0] += r["status"] == "ok"
            b[1] += 1
            b[2] = max(b[2], r["rel_err"] or 0)
        print("   K: " + "  ".join(f"{k}:{p}/{n} (max {m:.1e})" for k, (p, n, m) in sorted(by_k.items())))
        for r in fails[:5]:
            print(f"   fail {r['M']}x{r['N']}x{r['K']} {r['status']} {r['error'][:120]}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
