"""Where an evaluation's time goes, from the JSON lines GPU workers write under EVO_PROFILE=FILE
(evo/evaluation/steps.py): per shape, evaluations, mean seconds per evaluation, and per step its
count and seconds per evaluation; then the same over all shapes, largest steps first.

    python3 benchmarks/search/throughput_profile.py PROFILE.jsonl
"""
import json
import statistics
import sys
from collections import defaultdict


def main(path: str) -> None:
    lines = [json.loads(ln) for ln in open(path) if ln.strip()]
    if not lines:
        print(f"{path}: no evaluations profiled")
        return
    synced = any(ln.get("synced") for ln in lines)
    how = ("waited for the GPU (EVO_PROFILE_SYNC=1): each step includes its GPU time" if synced
           else "not synchronised: GPU time lands on the step that waits")
    print(f"{len(lines)} evaluations; steps {how}")
    by_shape = defaultdict(list)
    for ln in lines:
        by_shape["x".join(map(str, ln.get("shape") or [])) + (" +libraries" if ln.get("libraries") else "")].append(ln)
    overall: dict[str, float] = defaultdict(float)
    total_all = sum(ln["total_s"] for ln in lines)
    for shape, group in sorted(by_shape.items()):
        n = len(group)
        sets = sorted({ln.get("sets") for ln in group if ln.get("sets")})
        chunks = [ln["chunks"] for ln in group if ln.get("chunks")]
        mean = sum(ln["total_s"] for ln in group) / n
        median = statistics.median(ln["total_s"] for ln in group)
        print(f"\n== {shape}: {n} evaluations, {mean * 1e3:.1f} ms each (median {median * 1e3:.1f}); "
              f"sets {sets}, chunks/replay {statistics.median(chunks) if chunks else '-'}")
        acc: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
        for ln in group:
            for name, v in ln["steps"].items():
                acc[name][0] += v["count"]
                acc[name][1] += v["s"]
                overall[name] += v["s"]
        for name, (count, s) in sorted(acc.items(), key=lambda kv: -kv[1][1]):
            print(f"   {name:<42} {count / n:8.1f} x  {s / n * 1e3:9.2f} ms/eval  {100 * s / max(mean * n, 1e-9):5.1f}%")
    print(f"\n== all shapes: {total_all / len(lines) * 1e3:.1f} ms per evaluation on average")
    for name, s in sorted(overall.items(), key=lambda kv: -kv[1]):
        print(f"   {name:<42} {s / len(lines) * 1e3:9.2f} ms/eval  {100 * s / total_all:5.1f}%")


if __name__ == "__main__":
    main(sys.argv[1])
