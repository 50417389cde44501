"""How much faster than the shortlist sweep's best is ANY kernel measured in an `evo compare` run?

Issue 14 asks a search to beat the shortlist sweep by 1.05x (geomean over shapes of per-shape best
time ratios) at 24 evaluations per shape. This answers the question under it: on these shapes, does
the current genome hold kernels much faster than the shortlist's, that some arm has already measured?
Per compare run and shape it pools every arm and seed (the union: searches, random sweeps, the
shortlist itself) and reports
  - the shortlist's best and the union's best as found (each arm's per-shape elite; the union's is the
    fastest of them), and their ratio (shortlist time / union time, >= 1 by construction);
  - the same on the re-timed medians (retime.sqlite: every arm's per-shape best timed again side by
    side, median of its rounds): the union's is the fastest re-timed best of any arm;
  - a selection-free check: the as-found union winner's own re-timed time (chosen on one measurement,
    read on another);
  - which arm and seed gave the union's best, and how its genome differs from the shortlist's best
    (`evo.search.compare.genome_changes`); the evaluations and distinct kernels the union had there.
The union is an upper bound on what a search within the genome has been seen to find: it spends every
arm's evaluations (hundreds per shape), not 24. Both union ratios are biased upward by selection (the
winner's curse): as found, a best of many draws reads ~0.7% fast on the H200 (one kernel's sd ~0.45%);
re-timed, the fastest of k re-timed kernels still reads fast, printed per run as "null": what the
re-timed union ratio would read if every kernel re-timed on a shape were exactly as fast as the
shortlist's best (simulated from the re-timing's own round-to-round spread).

Run from anywhere with evo installed (`. .venv/bin/activate`):
    python benchmarks/session30/findable.py [LABEL=]PATH[@COMPARE_JSON] ...
PATH: a compare output folder (arm archives *.sqlite, retime.sqlite), or a tarball of one (.tgz,
.tar.gz, .tar.xz; unpacked into a temporary folder; archives in folders are copied there too, since
evo opens an arm's archive for writing), or a compare.json with no archives (as-found ratios only).
COMPARE_JSON (optional; else a compare.json in the folder or beside PATH) is used only to check that
the per-arm geomeans read here match what `evo compare` reported.
"""
from __future__ import annotations

import json
import logging
import math
import random
import shutil
import statistics
import sys
import tarfile
import tempfile
from pathlib import Path

from tabulate import tabulate

from evo.archive import Archive
from evo.archive.queries import run_timings
from evo.core.shapes import Shape
from evo.core.summary import geomean
from evo.search.compare import ORDER, REFERENCE, ArmRun, archive_path, genome_changes, read_arm, stored_arms, stored_setting
from evo.search.retime import RETIME_ARCHIVE, stored

SHOWN = (1.02, 1.05)  # per-shape gains counted in the summary


def null_gain(residuals: list[float], rounds: int, k: int, draws: int = 4000) -> float:
    """E[log(shortlist / fastest of k)] on re-timed medians if all k kernels (the shortlist's best one of
    them) were equally fast: each kernel's `rounds` times drawn from the re-timing's own pooled residuals
    (heavy-tailed: a median of rounds shrugs off one outlier, which a normal sd would not show), seeded."""
    if k <= 1 or not residuals:
        return 0.0
    rng = random.Random(k)
    total = 0.0
    for _ in range(draws):
        meds = [statistics.median(rng.choice(residuals) for _ in range(rounds)) for _ in range(k)]
        total += meds[0] - min(meds)
    return total / draws


def unpack(path: Path, into: Path) -> list[Path]:
    """The compare folders (each holding a shortlist.sqlite) in a tarball or folder, copied under `into`."""
    if path.is_file():
        with tarfile.open(path) as t:
            t.extractall(into, filter="data")
    else:
        for f in path.rglob("*.sqlite*"):
            if f.suffix in (".sqlite", ".sqlite-wal", ".sqlite-shm") or f.name.endswith((".sqlite-wal", ".sqlite-shm")):
                dest = into / f.relative_to(path)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, dest)
    return sorted(p.parent for p in into.rglob("shortlist.sqlite"))


def shape_kernels(path: Path) -> dict[Shape, set[str]]:
    """The distinct kernels an arm's last run evaluated on each shape."""
    a = Archive.open(path, create=False, readonly=True)
    try:
        run = a.last_run()
        out: dict[Shape, set[str]] = {}
        for row in run_timings(a, run["id"]):
            out.setdefault(Shape(row["M"], row["N"], row["K"]), set()).add(row["kernel_id"])
        return out
    finally:
        a.close()


def gpus(path: Path) -> tuple[str, int, str]:
    """The GPU model(s) and count an archive's evaluations ran on, and the day its last run began."""
    a = Archive.open(path, create=False, readonly=True)
    try:
        names = [r["gpu"] for r in a.db.query("select distinct gpu from evaluations")]
        began = (a.last_run() or {}).get("created_at") or "?"
    finally:
        a.close()
    models = sorted({n.split(" [")[0].replace("NVIDIA ", "").replace(" 80GB HBM3", "") for n in names if n})
    return ", ".join(models), len(names), began[:16]


def round_spread(out: Path) -> tuple[list[float], int, float | None, float | None]:
    """The last re-timing's pooled residuals of log time between rounds (one kernel on one shape, each
    from its pair's mean, scaled by sqrt(n / (n - 1)) to stand for single draws), its rounds, their sd,
    and the median over pairs of the range between rounds."""
    path = out / RETIME_ARCHIVE
    if not path.is_file():
        return [], 0, None, None
    a = Archive.open(path, create=False, readonly=True)
    try:
        run = a.last_run("retime")
        times: dict[tuple, list[float]] = {}
        for row in run_timings(a, run["id"]):
            if row["status"] == "ok" and row["time_ms"]:
                times.setdefault((row["kernel_id"], row["M"], row["N"], row["K"]), []).append(math.log(row["time_ms"]))
    finally:
        a.close()
    times = {key: ts for key, ts in times.items() if len(ts) > 1}
    if not times:
        return [], 0, None, None
    residuals = [(t - statistics.mean(ts)) * math.sqrt(len(ts) / (len(ts) - 1)) for ts in times.values() for t in ts]
    rounds = round(statistics.median(len(ts) for ts in times.values()))
    return (residuals, rounds, statistics.pstdev(residuals),
            statistics.median(max(ts) - min(ts) for ts in times.values()))


def best_of(runs: list[ArmRun], shape: Shape, times: str) -> ArmRun | None:
    """The arm-seed whose per-shape best is fastest on `times` (best_ms or retimed_ms); the shortlist wins ties."""
    have = [r for r in runs if shape in getattr(r, times)]
    return min(have, key=lambda r: (getattr(r, times)[shape], r.arm != REFERENCE), default=None)


def us(ms: float | None) -> str:
    return "-" if ms is None else f"{ms * 1000:.2f}"


def ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def who(r: ArmRun | None) -> str:
    return "-" if r is None else (r.arm if r.arm == REFERENCE else f"{r.arm} {r.seed}")


def check_json(runs: list[ArmRun], shapes: list[Shape], ref: ArmRun, path: Path | None) -> str:
    """Whether each arm-seed's geomean ratios read here match those `evo compare` wrote."""
    if path is None or not path.is_file():
        return "no compare.json to check against"
    arms = json.loads(path.read_text())["arms"]
    worst = 0.0
    for r in runs:
        if r.arm == REFERENCE or r.arm not in arms or r.seed not in arms[r.arm]["seeds"]:
            continue
        i = arms[r.arm]["seeds"].index(r.seed)
        mine = geomean([ref.best_ms[s] / r.best_ms[s] for s in shapes if s in ref.best_ms and s in r.best_ms])
        worst = max(worst, abs(mine - arms[r.arm]["geomean_vs_shortlist"][i]))
        if r.retimed_ms and arms[r.arm].get("geomean_vs_shortlist_retimed"):
            mine = geomean([ref.retimed_ms[s] / r.retimed_ms[s] for s in shapes
                            if s in ref.retimed_ms and s in r.retimed_ms])
            worst = max(worst, abs(mine - arms[r.arm]["geomean_vs_shortlist_retimed"][i]))
    return f"per arm-seed geomeans match {path.name} (largest difference {worst:.1e})"


def report_run(label: str, out: Path, json_path: Path | None, inside: str) -> dict:
    arms = sorted(stored_arms(out), key=lambda a: (ORDER.index(a[0]), a[1]))
    _, listed, grid = stored_setting(archive_path(out, REFERENCE, 0))
    from evo.core.shapes import build_shape_set
    shapes = build_shape_set(listed=list(listed), grid=list(grid))
    runs = [read_arm(archive_path(out, arm, seed), arm, seed) for arm, seed in arms]
    ref = next(r for r in runs if r.arm == REFERENCE)
    kernels: dict[Shape, set[str]] = {}
    for arm, seed in arms:
        for s, ks in shape_kernels(archive_path(out, arm, seed)).items():
            kernels.setdefault(s, set()).update(ks)
    medians = stored(out, {(r.best_kernel[s], s) for r in runs for s in r.best_kernel})
    for r in runs:
        if medians is not None:
            r.retimed_ms = {s: medians[(k, s)] for s, k in r.best_kernel.items() if (k, s) in medians}
    residuals, rounds, sd, spread = round_spread(out) if medians is not None else ([], 0, None, None)

    rows, changes, per = [], [], []
    for s in shapes:
        found, fair = best_of(runs, s, "best_ms"), best_of(runs, s, "retimed_ms")
        r_found = ref.best_ms[s] / found.best_ms[s]
        r_fair = ref.retimed_ms[s] / fair.retimed_ms[s] if fair and s in ref.retimed_ms else None
        r_check = (ref.retimed_ms[s] / found.retimed_ms[s]
                   if s in ref.retimed_ms and s in found.retimed_ms else None)
        k = len({r.best_kernel[s] for r in runs if s in r.retimed_ms})
        null = math.exp(null_gain(residuals, rounds, k)) if residuals else None
        per.append({"shape": s, "found": r_found, "fair": r_fair, "check": r_check, "null": null})
        rows.append([str(s), sum(r.on_shape.get(s, 0) for r in runs), len(kernels.get(s, ())),
                     us(ref.best_ms[s]), us(found.best_ms[s]), ratio(r_found), who(found),
                     us(ref.retimed_ms.get(s)), us(fair.retimed_ms[s] if fair else None), ratio(r_fair), who(fair),
                     ratio(r_check), k])
        for what, w in (("found", found), ("re-timed", fair)):
            if w is not None and w.arm != REFERENCE and (what == "found" or w.best_kernel[s] != found.best_kernel[s]):
                differs = genome_changes(ref.genome.get(s, {}), w.genome.get(s, {}))
                if w.best_kernel[s] == ref.best_kernel[s]:
                    differs = "none: the shortlist's own best kernel, drawing a faster time in this arm"
                changes.append([str(s), what, who(w), w.genome[s].get("operator") or "-", w.best_kernel[s][:12],
                                differs])
    gpu, n_gpus, began = gpus(archive_path(out, REFERENCE, 0))
    summary = {
        "gpu": f"{gpu} x{n_gpus}", "day": began[:10], "arm_seeds": len(runs) - 1,
        "evals": statistics.mean(sum(r.on_shape.get(s, 0) for r in runs) for s in shapes),
        "found": geomean([p["found"] for p in per]),
        "fair": geomean([p["fair"] for p in per]) if all(p["fair"] for p in per) else None,
        "check": geomean([p["check"] for p in per]) if all(p["check"] for p in per) else None,
        "null": geomean([p["null"] for p in per]) if all(p["null"] for p in per) else None,
        "per": per,
        "changes": changes,
    }
    seeds_of = {}
    for r in runs:
        seeds_of.setdefault(r.arm, []).append(r.seed)
    arm_geo = {}
    for r in runs:
        if r.arm != REFERENCE:
            arm_geo[who(r)] = (geomean([ref.best_ms[s] / r.best_ms[s] for s in shapes if s in r.best_ms]),
                               geomean([ref.retimed_ms[s] / r.retimed_ms[s] for s in shapes if s in r.retimed_ms])
                               if r.retimed_ms else None)
    best_arm = max(arm_geo.items(), key=lambda kv: kv[1][1] or kv[1][0], default=None)

    print(f"\n=== {label}{inside}: {gpu} ({n_gpus} GPU{'s' if n_gpus > 1 else ''}), shortlist run of {began}")
    print("arms: " + ", ".join(f"{a} (seed{'s' if len(v) > 1 else ''} {','.join(map(str, v))})"
                               for a, v in seeds_of.items())
          + f"; {len(shapes)} shapes; {sum(r.evaluations for r in runs)} evaluations in all")
    if medians is None:
        print("re-timed: none (no complete retime.sqlite in this run): as-found ratios only")
    else:
        print(f"re-timed: {rounds} rounds, median; one kernel's spread between rounds: median range {spread:.2%}, "
              f"pooled sd {sd:.2%} (heavy-tailed: a few pairs vary by several %)")
    print(check_json(runs, shapes, ref, json_path))
    print("times in us; ratio = shortlist time / union time (>= 1: the union is faster); evals, kernels = the union's "
          "evaluations and distinct kernels on the shape; found->rt = the as-found union winner's re-timed ratio "
          "(selection-free); k = distinct kernels re-timed on the shape")
    print(tabulate(rows, headers=["shape", "evals", "kernels", "shortlist", "union", "ratio", "union by",
                                  "shortlist rt", "union rt", "ratio rt", "union rt by", "found->rt", "k"],
                   disable_numparse=True, stralign="right"))
    print(f"geomean over shapes: as found {ratio(summary['found'])} (biased up: best of many draws), "
          f"re-timed {ratio(summary['fair'])} (fastest of k re-timed kernels; null {ratio(summary['null'])}), "
          f"as-found winner re-timed {ratio(summary['check'])}")
    if best_arm:
        print(f"best single arm-seed: {best_arm[0]} at {ratio(best_arm[1][0])} as found, "
              f"{ratio(best_arm[1][1])} re-timed (the issue's target: 1.05)")
    if changes:
        print("how the union's winners differ from the shortlist's best on the shape (found: fastest as found; "
              "re-timed: fastest re-timed, where another kernel)")
        print(tabulate(changes, headers=["shape", "winner", "arm seed", "operator", "kernel", "differs from the "
                                         "shortlist's best"], disable_numparse=True))
    else:
        print("the shortlist's own best is the union's best on every shape")
    return summary


def report_json(label: str, path: Path) -> dict:
    """A compare with only its compare.json kept: the as-found union per shape from the arms' ratios."""
    d = json.loads(path.read_text())
    rows, per = [], []
    for s in d["shapes"]:
        best, by = 1.0, REFERENCE
        for arm, v in d["arms"].items():
            for seed, x in zip(v["seeds"], v["per_shape"][s]["vs_shortlist"]):
                if x > best:
                    best, by = x, f"{arm} {seed}"
        per.append({"shape": s, "found": best, "fair": None})
        rows.append([s, ratio(best), by])
    arms = {a: v["seeds"] for a, v in d["arms"].items()}
    print(f"\n=== {label}: {path.name} only (no archives): {d.get('budget_per_shape')} evaluations a shape; arms "
          + ", ".join(f"{a} (seeds {','.join(map(str, v))})" for a, v in arms.items()))
    print("as found only (re-timed per-shape times and genomes are not in compare.json); ratio = shortlist / union")
    print(tabulate(rows, headers=["shape", "ratio", "union by"], disable_numparse=True, stralign="right"))
    retimed = {a: v.get("geomean_vs_shortlist_retimed") for a, v in d["arms"].items() if a != REFERENCE}
    print(f"geomean over shapes: as found {ratio(geomean([p['found'] for p in per]))}; each arm-seed's own re-timed "
          "geomean (compare.json): " + "; ".join(f"{a} {', '.join(ratio(x) for x in v) if v else '-'}"
                                                  for a, v in retimed.items()))
    return {"gpu": "? (json)", "day": "?", "arm_seeds": sum(len(v) for a, v in arms.items() if a != REFERENCE),
            "evals": None, "found": geomean([p["found"] for p in per]), "fair": None, "check": None, "null": None,
            "per": per, "changes": []}


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    logging.basicConfig(level=logging.ERROR)  # archives of an older schema are read as they are, quietly
    summaries = []
    with tempfile.TemporaryDirectory(prefix="findable.") as tmp:
        for i, arg in enumerate(argv):
            label, _, rest = arg.partition("=") if "=" in arg else ("", "", arg)
            where, _, js = rest.partition("@")
            path = Path(where)
            label = label or "/".join(path.parts[-3:-1] if path.is_file() else path.parts[-2:])
            if path.suffix == ".json":
                summaries.append((label, report_json(label, path)))
                continue
            folders = unpack(path, Path(tmp) / str(i))
            if not folders:
                print(f"\n=== {label}: no compare folder (shortlist.sqlite) in {path}: not readable here")
                continue
            for out in folders:
                json_path = Path(js) if js else next((p for p in (out / "compare.json", path.parent / "compare.json",
                                                                  path / "compare.json") if p.is_file()), None)
                inside = "" if out == Path(tmp) / str(i) else f" ({out.relative_to(Path(tmp) / str(i))})"
                try:
                    summaries.append((label, report_run(label, out, json_path, inside)))
                except Exception as e:  # an archive evo cannot read: say so and go on
                    print(f"\n=== {label}: {out}: not readable ({type(e).__name__}: {e})")
    rows = []
    for label, s in summaries:
        fair = [p["fair"] for p in s["per"] if p.get("fair")]
        top = max((p for p in s["per"] if p["fair"]), key=lambda p: p["fair"], default=None)
        rows.append([label, s["gpu"], s["day"], s["arm_seeds"], f"{s['evals']:.0f}" if s["evals"] else "-",
                     ratio(s["found"]), ratio(s["fair"]), ratio(s["null"]), ratio(s["check"]),
                     "/".join(f"{sum(x >= g for x in fair) if fair else '-'}" for g in SHOWN),
                     f"{ratio(top['fair'])} {top['shape']}" if top else "-"])
    print("\n=== summary: union of every arm and seed vs the shortlist sweep, geomean over shapes (>= 1 by construction)")
    print(tabulate(rows, headers=["run", "GPU", "shortlist run", "arm-seeds", "evals/shape", "as found", "re-timed",
                                  "null", "found->rt",
                                  "shapes rt >= " + "/".join(f"{g:.2f}" for g in SHOWN), "largest rt"],
                   disable_numparse=True, stralign="right"))
    print("as found: each arm's per-shape elite, the union's fastest; biased up by the winner's curse (a best of many "
          "draws reads ~0.7% fast on the H200, one kernel's sd ~0.45%), more so the more evaluations the union had.\n"
          "re-timed: the fastest of every arm's per-shape bests timed again side by side (median of rounds): the fair "
          "figure, though still a fastest-of-k; null: what it would read if all k were as fast as the shortlist's best.\n"
          "found->rt: the as-found union winner's re-timed ratio: chosen on one measurement, read on another (no "
          "selection bias; may miss a faster kernel that drew a slow as-found time).")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
