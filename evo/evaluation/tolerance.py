"""The correctness criterion, chosen by experiment (benchmarks/tolerance/).

An fp16 output of an fp32-accumulating kernel differs from the fp32 reference by the final
rounding only: a normwise relative error near 2e-4 whatever K is. Accumulating in fp16 adds a
rounding per partial sum, so the error grows with K. The normwise bound NORM_RTOL sits between
the two; the elementwise bound catches a few wrong elements that the norm would hide.

The functions work on numpy arrays and torch tensors alike (float32 inputs).
"""
from __future__ import annotations

NORM_RTOL = 5e-4  # ||out - ref|| / ||ref||
ELEM_RTOL = 2.0 ** -10  # per element, relative to |ref| (two fp16 half-ulps)
ELEM_ATOL_RMS = 1e-3  # per element, relative to the rms of ref (for elements near zero)
# per element, absolute: one step of fp16's subnormals. An output below 2^-14 is rounded to a multiple
# of 2^-24, an absolute error no relative bound covers; on 1x1x1 (K = 1, the rms is the element
# itself) about one refresh of 8192 sets in 15 had such an honest output fail.
ELEM_ATOL_FP16 = 2.0 ** -24


def error_stats(out, ref) -> dict:
    """Numbers that decide correctness. `out` and `ref` are float32 arrays of the same shape."""
    n = 1
    for d in out.shape:
        n *= int(d)
    nonfinite = int(((out != out) | (abs(out) == float("inf"))).sum())
    diff = out - ref
    ref_sq = float((ref * ref).sum())
    if nonfinite:
        return {"elements": n, "nonfinite": nonfinite, "rel_err": float("inf"), "bad_elements": n, "worst": None}
    # the normwise error leaves out the rounding of fp16 subnormals (ELEM_ATOL_FP16 per element): a
    # 1x1x1 output of 1e-6 is otherwise 3% wrong when rounded correctly
    beyond = abs(diff) - ELEM_ATOL_FP16
    beyond = beyond * (beyond > 0)
    rel = (float((beyond * beyond).sum()) / ref_sq) ** 0.5 if ref_sq > 0 else float((beyond * beyond).sum()) ** 0.5
    rms = (ref_sq / n) ** 0.5
    tol = ELEM_RTOL * abs(ref) + (ELEM_ATOL_RMS * rms + ELEM_ATOL_FP16)
    excess = abs(diff) - tol
    bad = int((excess > 0).sum())
    return {"elements": n, "nonfinite": 0, "rel_err": rel, "bad_elements": bad,
            "worst": float(excess.max()) if bad else None}


def verdict(stats: dict) -> str | None:
    """None when correct, otherwise the reason (written for a person and a repair prompt)."""
    if stats["nonfinite"]:
        return (f"{stats['nonfinite']} of {stats['elements']} outputs are NaN/Inf (outputs are poisoned with NaN "
                f"before each launch: elements left unwritten show up here)")
    if stats["rel_err"] > NORM_RTOL:
        return (f"normwise relative error {stats['rel_err']:.2e} exceeds {NORM_RTOL:.0e} (fp16 accumulation or "
                f"a wrong result; accumulate in fp32)")
    if stats["bad_elements"]:
        return (f"{stats['bad_elements']} of {stats['elements']} elements differ from the fp32 reference beyond "
                f"{ELEM_RTOL:.1e}*|ref| + {ELEM_ATOL_RMS:.0e}*rms(ref) + 2^-24")
    return None
