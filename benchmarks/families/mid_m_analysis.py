"""Where the kernel families lose on real layer shapes: the mid-M analysis of a shortlist sweep archive.

    python3 benchmarks/families/mid_m_analysis.py ARCHIVE.sqlite [--below 0.85]

Reads an `evo sweep` archive (tables evaluations, kernels, baselines); prints, for every shape whose best
configuration is below `--below` of the best library: the measured picks, the geometry of the best one
(tiles, waves, M padding, k-steps per CTA, TFLOP/s against the library's), a calibrated timing model of
the hopper family, the model's best configuration in today's design space and in a few extended spaces
(64-row remainder, BM=192, stream-K), and the same for the 1-10 GFLOP bucket. Stdlib + numpy only.
Written for benchmarks/families/mid_m_analysis.md.
"""
from __future__ import annotations

import argparse
import itertools
import json
import math
import sqlite3
from collections import defaultdict

import numpy as np

SMS = 132
BW_GBS = 4268.0  # device_peaks.bandwidth_gbs of the H200 archive (overwritten from the archive if present)
SPLITS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32)  # evo.families._family.ANY_SPLITS


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


# ---- reading the archive ---------------------------------------------------------------------------

def load(path: str):
    db = sqlite3.connect(path)
    rows = db.execute(
        "select e.M, e.N, e.K, k.family, k.params_json, e.time_ms, e.best_library_ms, e.best_library, "
        "e.launch_json from evaluations e join kernels k on k.id = e.kernel_id "
        "where e.status = 'ok' and e.time_ms is not null").fetchall()
    shapes: dict[tuple, list[dict]] = defaultdict(list)
    lib: dict[tuple, tuple[float, str]] = {}
    for M, N, K, fam, params, t, lib_ms, lib_name, launch in rows:
        shapes[(M, N, K)].append({"family": fam, "p": json.loads(params), "us": t * 1e3,
                                  "grid": json.loads(launch or "{}").get("grid", [0])[0]})
        lib[(M, N, K)] = (lib_ms * 1e3, lib_name)
    for picks in shapes.values():
        picks.sort(key=lambda r: r["us"])
    global BW_GBS
    peak = db.execute("select bandwidth_gbs from device_peaks").fetchone()
    BW_GBS = float(peak[0]) if peak and peak[0] else BW_GBS
    return shapes, lib


def label(fam: str, p: dict) -> str:
    if fam == "hopper":
        split = "" if p["SPLIT_K"] == 1 else f" sk{p['SPLIT_K']}{'cl' if p['SPLIT_CLUSTER'] else 'at'}"
        two = " 2cta" if p["CTAS_PER_SM"] == 2 else ""
        return f"H {p['BM']}x{p['BN']}/{p['CONSUMERS']}{split}{two} st{p['STAGES']}"
    if fam == "ampere":
        return f"A {p['BM']}x{p['BN']}x{p['BK']}" + (f" sk{p['SPLIT_K']}" if p["SPLIT_K"] > 1 else "")
    if fam == "skinny":
        return f"S {p['MP']}x{p['BN']} w{p['WARPS']} sk{p['SPLIT_K']}"
    return fam


# ---- the timing model --------------------------------------------------------------------------------
# A hopper kernel is a persistent grid (or, for cluster split-K, one wave of clusters per 132 CTAs) whose
# busiest SM runs W = cdiv(items, 132) work items back to back (two CTAs per SM share the SM's tensor
# cores: same W). An item is kst k-steps of BMxBNx64 at a per-SM rate R of its tile class (BM, BN,
# consumers, CTAs per SM), plus a split-K reduction:
#   T = t0 + W * kst * 2*BM*BN*64 / R[class] + [atomic split-K] W * a * BM*BN + [cluster split-K] c * BM*BN
# t0, every R, a and c are fitted by least squares on relative error over every hopper evaluation of the
# archive. A class the sweep never ran (BN=192 with BM=64, BM=192) takes the rate of the measured
# one-CTA-per-SM classes at the same operand intensity BM*BN/(BM+BN), interpolated.

def geometry(M: int, N: int, K: int, bm: int, bn: int, split: int) -> dict:
    """Work items of a tiling: row and column tiles, items, waves on SMS SMs, padding, k-steps per item."""
    tm, tn, kt = cdiv(M, bm), cdiv(N, bn), cdiv(K, 64)
    items = tm * tn * split
    return {"tm": tm, "tn": tn, "items": items, "W": cdiv(items, SMS), "kst": cdiv(kt, split),
            "last_wave": (items - (cdiv(items, SMS) - 1) * SMS) / SMS, "pad_rows": tm * bm - M}


def tile_class(p: dict) -> tuple[int, int, int, int]:
    return p["BM"], p["BN"], p.get("CONSUMERS", 1), p.get("CTAS_PER_SM", 1)


def _row(M: int, N: int, K: int, p: dict, classes: list) -> list[float]:
    bm, bn, split = p["BM"], p["BN"], p["SPLIT_K"]
    g = geometry(M, N, K, bm, bn, split)
    x = [0.0] * (len(classes) + 3)
    x[0] = 1.0
    x[1 + classes.index(tile_class(p))] = g["W"] * g["kst"] * 2 * bm * bn * 64 / 1e6
    cluster = split > 1 and p.get("SPLIT_CLUSTER", 0) == 1
    if split > 1 and not cluster:
        x[-2] = g["W"] * bm * bn / 1e3
    if cluster:
        x[-1] = bm * bn / 1e3
    return x


def fit(shapes: dict, min_flop: float = 0.0) -> dict:
    """Least squares on relative error over the hopper evaluations of shapes of at least `min_flop`."""
    obs = [(s, r["p"], r["us"]) for s, picks in shapes.items() for r in picks
           if r["family"] == "hopper" and 2 * math.prod(s) >= min_flop]
    classes = sorted({tile_class(p) for _, p, _ in obs})
    X = np.array([_row(*s, p, classes) for s, p, _ in obs])
    y = np.array([t for _, _, t in obs])
    A = X / y[:, None]
    coef, *_ = np.linalg.lstsq(A, np.ones(len(y)), rcond=None)
    coef = np.maximum(coef, 1e-9)
    rate = {cl: 1 / coef[1 + i] for i, cl in enumerate(classes)}  # TFLOP/s per SM
    return {"t0": coef[0], "bw": BW_GBS, "rate": rate, "a": coef[-2], "c": coef[-1], "n": len(obs),
            "rms": float(np.sqrt(np.mean((A @ coef - 1) ** 2)))}


def rate_of(model: dict, bm: int, bn: int, cons: int = 1, ctas: int = 1) -> float:
    """TFLOP/s per SM of a tile class; unmeasured classes: interpolated by operand intensity."""
    cl = (bm, bn, cons, ctas)
    if cl in model["rate"]:
        return model["rate"][cl]
    known = sorted((b * n / (b + n), r) for (b, n, _, k), r in model["rate"].items() if k == 1)
    return float(np.interp(bm * bn / (bm + bn), [i for i, _ in known], [r for _, r in known]))


def step_us(model: dict, bm: int, bn: int, cons: int = 1, ctas: int = 1) -> float:
    """Modelled time of one BMxBNx64 k-step on one SM."""
    return 2 * bm * bn * 64 / 1e6 / rate_of(model, bm, bn, cons, ctas)


def predict(model: dict, M: int, N: int, K: int, p: dict) -> float:
    bm, bn, split = p["BM"], p["BN"], p["SPLIT_K"]
    g = geometry(M, N, K, bm, bn, split)
    t = model["t0"] + g["W"] * g["kst"] * step_us(model, *tile_class(p))
    if split > 1:
        t += model["c"] * bm * bn / 1e3 if p.get("SPLIT_CLUSTER") else model["a"] * g["W"] * bm * bn / 1e3
    return max(t, floor(model, M, N, K))


def floor(model: dict, M: int, N: int, K: int) -> float:
    """t0 + reading A and B and writing C once at the archive's measured copy bandwidth."""
    return model["t0"] + 2 * (M * K + K * N + M * N) / model["bw"] / 1e3


def hopper_space() -> list[dict]:
    """Today's hopper design space, the parameters the model sees (stages, raster group: not modelled)."""
    out = []
    for bm, bn, cons, ctas in itertools.product((64, 128, 256), (64, 128, 192, 256), (1, 2), (1, 2)):
        rows = bm // cons
        if rows not in (64, 128) or rows * bn // 128 > 128 or (ctas == 2 and (cons != 1 or bn > 128)):
            continue
        if ctas == 2 and 2 * (bm + bn) * 64 * 2 + cons * 64 * 72 * 2 > 233472 // 2 - 2048:  # 2 stages fit?
            continue
        for split in SPLITS:
            out.append({"BM": bm, "BN": bn, "CONSUMERS": cons, "CTAS_PER_SM": ctas, "SPLIT_K": split,
                        "SPLIT_CLUSTER": 0})
            if split in (2, 4, 8) and bm % split == 0 and ctas == 1 and bm * (bn + 8) * 4 <= 232448 - 4096:
                out.append({"BM": bm, "BN": bn, "CONSUMERS": cons, "CTAS_PER_SM": 1, "SPLIT_K": split,
                            "SPLIT_CLUSTER": 1})
    return out


def model_best(model: dict, M: int, N: int, K: int, space: list[dict]) -> tuple[float, dict]:
    kt = cdiv(K, 64)
    scored = [(predict(model, M, N, K, p), p) for p in space if p["SPLIT_K"] == 1 or kt // p["SPLIT_K"] >= 2]
    return min(scored, key=lambda x: x[0])


def extended(model: dict, M: int, N: int, K: int) -> dict[str, float]:
    """Modelled times (us) of design-space additions, each the best over its tile widths."""
    kt, t0 = cdiv(K, 64), model["t0"]
    out: dict[str, float] = {}
    # (1) a remainder tile: 128-row tiles (two consumers) for the multiple of 128 and one 64-row tile
    # (one consumer) for a remainder of at most 64 rows, in one persistent schedule (longest first)
    best = math.inf
    full, rest = divmod(M, 128)
    if 0 < rest <= 64:
        for bn in (128, 192, 256):
            tn = cdiv(N, bn)
            work = ([kt * step_us(model, 128, bn, 2)] * (full * tn)
                    + [kt * step_us(model, 64, bn, 1)] * tn)
            best = min(best, t0 + lpt(work))
    out["128 + 64-row remainder"] = best
    # (2) BM = 192 (three 64-row consumers, or 128 + 64), without and with split-K over atomics
    best = math.inf
    for bn, split in itertools.product((64, 128, 192), (1, 2, 3, 4)):
        if split > 1 and kt // split < 4:
            continue
        best = min(best, predict(model, M, N, K, {"BM": 192, "BN": bn, "CONSUMERS": 2, "SPLIT_K": split}))
    out["BM=192"] = best
    # (3) stream-K: all tiles' k-steps dealt evenly to the SMs; an SM whose share ends inside a tile
    # leaves a partial for a fix-up (one atomic-split reduction per SM)
    best = math.inf
    for bm, bn, cons in ((64, 128, 1), (64, 256, 1), (128, 128, 2), (128, 192, 2), (128, 256, 2), (256, 128, 2)):
        tiles = cdiv(M, bm) * cdiv(N, bn)
        per_sm = cdiv(tiles * kt, SMS)
        fixup = 0.0 if tiles % SMS == 0 else model["a"] * bm * bn / 1e3
        best = min(best, t0 + per_sm * step_us(model, bm, bn, cons) + fixup)
    out["stream-K"] = best
    # (4) stream-K with 64-row granularity of M (a 64-row remainder tile inside stream-K)
    if 0 < rest <= 64:
        rows = 128 * full
        cand = []
        for bn in (128, 192, 256):
            steps = cdiv(rows, 128) * cdiv(N, bn) * kt * step_us(model, 128, bn, 2) + cdiv(N, bn) * kt * step_us(
                model, 64, bn, 1)
            cand.append(t0 + steps / SMS + model["a"] * 128 * bn / 1e3)
        out["stream-K + 64-row remainder"] = min(cand)
    else:
        out["stream-K + 64-row remainder"] = out["stream-K"]
    # (5) the bound: M padded to 64 rows only, every SM at the best measured rate, no quantization
    top = max(model["rate"].values())
    out["bound"] = t0 + 2 * cdiv(M, 64) * 64 * N * K / 1e6 / top / SMS
    return {k: max(v, floor(model, M, N, K)) for k, v in out.items()}


def lpt(work: list[float]) -> float:
    """Makespan of longest-first greedy placement on SMS machines (a persistent scheduler's best)."""
    loads = [0.0] * SMS
    for w in sorted(work, reverse=True):
        i = loads.index(min(loads))
        loads[i] += w
    return max(loads)


def tflops(M: int, N: int, K: int, us: float) -> float:
    return 2 * M * N * K / us / 1e6


# ---- report ----------------------------------------------------------------------------------------------

def report(path: str, below: float) -> None:
    shapes, lib = load(path)
    model = fit(shapes)
    space = hopper_space()
    best = {s: picks[0] for s, picks in shapes.items()}
    ratio = {s: lib[s][0] / best[s]["us"] for s in shapes}
    weak = sorted((s for s in shapes if ratio[s] < below), key=lambda s: ratio[s])
    print(f"# model fit on {model['n']} hopper evaluations: t0 {model['t0']:.2f} us, atomic split-K "
          f"{model['a']:.3f} us per 1k outputs per item, cluster split-K {model['c']:.3f} us per 1k outputs; "
          f"rms relative error {model['rms']:.3f}")
    print("tile class (BM, BN, consumers, CTAs/SM) | TFLOP/s per SM | x 132 SMs")
    print("---|---|---")
    for cl, r in sorted(model["rate"].items()):
        print(f"{cl} | {r:.2f} | {r * SMS:.0f}")
    for cl in ((64, 192, 1, 1), (192, 128, 2, 1), (192, 192, 2, 1)):
        print(f"{cl} (interpolated) | {rate_of(model, *cl):.2f} | {rate_of(model, *cl) * SMS:.0f}")
    big = fit(shapes, min_flop=1e11)
    print(f"# the same fit on shapes >= 0.1 TFLOP only ({big['n']} evaluations): t0 {big['t0']:.2f} us, "
          f"128x256 {big['rate'].get((128, 256, 2, 1), 0) * SMS:.0f} TFLOP/s, rms {big['rms']:.3f}")
    print()
    print("## calibration: model against measurement, best hopper pick of each shape, by FLOP bucket")
    print("bucket | shapes won by hopper | geomean model/measured | min | max")
    print("---|---|---|---|---")
    buckets = ((0, 1e9, "<1 GFLOP"), (1e9, 1e10, "1-10 GFLOP"), (1e10, 1e11, "10-100 GFLOP"),
               (1e11, 1e12, "0.1-1 TFLOP"), (1e12, 1e99, ">=1 TFLOP"))
    for lo, hi, name in buckets:
        r = [predict(model, *s, h["p"]) / h["us"] for s, picks in shapes.items() if lo <= 2 * math.prod(s) < hi
             for h in picks[:1] if h["family"] == "hopper"]
        if r:
            print(f"{name} | {len(r)} | {np.exp(np.mean(np.log(r))):.3f} | {min(r):.2f} | {max(r):.2f}")
    print()
    print(f"## shapes below {below} of the best library ({len(weak)})")
    rows = []
    for s in weak:
        M, N, K = s
        lib_us, lib_name = lib[s]
        picks = shapes[s]
        print(f"\n### {M}x{N}x{K}: best {best[s]['us']:.2f} us ({label(best[s]['family'], best[s]['p'])}), "
              f"library {lib_us:.2f} us ({lib_name}), ratio {ratio[s]:.3f}, {2 * M * N * K / 1e9:.2f} GFLOP")
        print("picks (us): " + "; ".join(f"{label(r['family'], r['p'])} {r['us']:.1f}" for r in picks))
        h = next(r for r in picks if r["family"] in ("hopper", "skinny", "ampere"))
        p = h["p"]
        bm = p.get("BM", p.get("MP"))
        g = geometry(M, N, K, bm, p["BN"], p["SPLIT_K"])
        print(f"best: tiles {g['tm']}x{g['tn']}x{p['SPLIT_K']} = {g['items']} items, {g['items'] / SMS:.2f} waves "
              f"(last wave {g['last_wave']:.2f} full), padding {g['pad_rows']} of {g['tm'] * bm} rows "
              f"(last row tile {(g['tm'] * bm - M) / bm:.2f} padding), {g['kst']} k-steps per item, "
              f"{tflops(M, N, K, h['us']):.0f} TFLOP/s vs library {tflops(M, N, K, lib_us):.0f}")
        copy_us = 2 * (M * K + K * N + M * N) / model["bw"] / 1e3
        print(f"bytes: A+B+C once = {copy_us:.1f} us at {model['bw']:.0f} GB/s: library {copy_us / lib_us:.2f}, "
              f"best pick {copy_us / h['us']:.2f} of copy bandwidth")
        t_mb, p_mb = model_best(model, M, N, K, space)
        ext = extended(model, M, N, K)
        hop = [r for r in picks if r["family"] == "hopper"]
        pred_best_pick = min(predict(model, M, N, K, r["p"]) for r in hop)
        mb_label = label("hopper", dict(p_mb, STAGES="*"))
        print(f"model: best measured hopper pick predicted {pred_best_pick:.1f} us; today's space best {mb_label} "
              f"{t_mb:.1f} us; " + "; ".join(f"{k} {v:.1f} us" for k, v in ext.items()))
        rows.append((s, ratio[s], best[s]["us"], lib_us, pred_best_pick, t_mb, mb_label, ext))
    print("\n## summary table (us; 'x lib' = library time / modelled time, measured ratio for 'best')")
    keys = list(rows[0][7]) if rows else []
    print("shape | best x lib | model: pick | model: space best | " + " | ".join(keys))
    print("---|---|---|---|" + "---|" * len(keys))
    for s, r, _t, lib_us, tp, tmb, mbl, ext in rows:
        cells = " | ".join(f"{lib_us / v:.2f}" if v < math.inf else "-" for v in ext.values())
        print(f"{'x'.join(map(str, s))} | {r:.3f} | {lib_us / tp:.2f} | {lib_us / tmb:.2f} ({mbl}) | {cells}")
    print("\n## 1-10 GFLOP bucket")
    mid = sorted((s for s in shapes if 1e9 <= 2 * math.prod(s) < 1e10), key=lambda s: s[0])
    print("shape | best | x lib | family | model space best x lib | stream-K x lib")
    print("---|---|---|---|---|---")
    for s in mid:
        t_mb, p_mb = model_best(model, *s, space)
        ext = extended(model, *s)
        print(f"{'x'.join(map(str, s))} | {label(best[s]['family'], best[s]['p'])} | {ratio[s]:.3f} | "
              f"{best[s]['family']} | {lib[s][0] / t_mb:.2f} | {lib[s][0] / ext['stream-K']:.2f}")
    gm = np.exp(np.mean([np.log(ratio[s]) for s in mid]))
    print(f"geomean measured {gm:.3f} over {len(mid)} shapes")
    print("\n## neighbours: same N, K at other M (best pick, TFLOP/s, x lib)")
    nk = defaultdict(list)
    for s in shapes:
        nk[s[1:]].append(s[0])
    for s in weak:
        others = sorted(nk[s[1:]])
        cells = [f"M={m}: {label(best[(m, *s[1:])]['family'], best[(m, *s[1:])]['p'])} "
                 f"{tflops(m, *s[1:], best[(m, *s[1:])]['us']):.0f} TF/s x{ratio[(m, *s[1:])]:.2f}" for m in others]
        print(f"{'x'.join(map(str, s))}: " + "; ".join(cells))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("archive")
    ap.add_argument("--below", type=float, default=0.85)
    args = ap.parse_args()
    report(args.archive, args.below)


if __name__ == "__main__":
    main()
