"""Issue 5 evidence: `evo run` against `evo sweep sample=random` at the same evaluation budget on
8 shapes spread over the FLOP buckets, on one GPU, each with its libraries measured in its own run.
Usage (GPU machine): python3 benchmarks/search/search_vs_random.py OUT_DIR BUDGET_PER_SHAPE
Superseded by `evo compare` (benchmarks/search/compare_gpu.sh): its random arm samples the
tensor-core families only, and it also compares with the shortlist sweep and a uniform policy.
"""
import json
import subprocess
import sys
from pathlib import Path

from evo.archive import Archive

SHAPES = "[64x64x64,256x1024x64,64x4096x4096,1024x1024x1024,333x11008x4096,4096x1024x4096,4096x4096x4096,8192x8192x8192]"
COMMON = [f"shapes.list={SHAPES}", "shapes=inline", "evaluator.draws=2", "evaluator.replays=5",
          "evaluator.target_replay_ms=5", "search.progress=true", "llm=none"]


def curve(path: Path) -> dict:
    """Per shape: final best speedup and the evaluation count at each improvement."""
    a = Archive.open(path, create=False)
    out = {}
    for row in a.db.query("select cell, speedup, evaluations_so_far from elite_history order by id"):
        out.setdefault(row["cell"], []).append((row["evaluations_so_far"], row["speedup"]))
    return out


def main(out: Path, per_shape: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    budget = 8 * per_shape
    run = ["python3", "-m", "evo", "run", *COMMON, f"archive.path={out / 'search.sqlite'}",
           f"search.max_evaluations={budget}", "islands.n=2", "islands.population=8", "search.children_per_island=8"]
    sweep = ["python3", "-m", "evo", "sweep", *COMMON, f"archive.path={out / 'random.sqlite'}",
             "sweep.sample=random", f"sweep.budget={per_shape}", "search.seed=0"]
    for cmd in (run, sweep):
        print("$", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=False)
    s, r = curve(out / "search.sqlite"), curve(out / "random.sqlite")
    print(f"\nbudget {budget} evaluations ({per_shape} per shape)")
    print(f"{'shape':>18} {'search best':>12} {'random best':>12} {'search evals to 95%':>20} {'random evals to 95%':>20}")
    rows = []
    for cell in sorted(set(s) | set(r), key=lambda c: eval(c.replace("x", "*"))):
        sb = max((v for _, v in s.get(cell, [])), default=None)
        rb = max((v for _, v in r.get(cell, [])), default=None)
        target = 0.95 * sb if sb else None

        def reach(hist, target=target):
            return next((n for n, v in hist if target and v >= target), None)
        rows.append({"shape": cell, "search": sb, "random": rb, "search_reach": reach(s.get(cell, [])),
                     "random_reach": reach(r.get(cell, []))})
        f = lambda x: f"{x:.3f}" if x else "-"  # noqa: E731
        print(f"{cell:>18} {f(sb):>12} {f(rb):>12} {str(rows[-1]['search_reach']):>20} {str(rows[-1]['random_reach']):>20}")
    policy = Archive.open(out / "search.sqlite").get_state(1, "policy")
    from evo.mutators.policy import OperatorPolicy
    p = OperatorPolicy(policy["operators"])
    p.load(policy)
    print("\nlearned operator probabilities per context:")
    for ctx, probs in p.snapshot().items():
        print(f"  {ctx:<28} " + "  ".join(f"{op} {v:.2f}" for op, v in probs.items()))
    (out / "summary.json").write_text(json.dumps({"rows": rows, "policy": p.snapshot()}, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]), int(sys.argv[2]))
