"""Pairs of hopper kernels that differ only in STAGES (same other genes, same compile options), timed
on the same shape in the same archive (rotating mode, correct): how much deeper pipelines gain with
and without split-K, and with split-K by reduction (FIXUP=1 ordered over a workspace, FIXUP=0 atomics).

    python benchmarks/session13/stages_pairs.py ARCHIVE.sqlite [...]
"""
import json
import math
import sqlite3
import sys
from collections import defaultdict

from evo.core.compile_options import options_or_none


def pairs(path: str):
    db = sqlite3.connect(path)
    rows = db.execute("select k.params_json, k.source, e.M, e.N, e.K, e.time_ms from evaluations e join kernels k "
                      "on k.id = e.kernel_id where e.status = 'ok' and e.mode = 'rotating' and k.family = 'hopper'")
    best: dict = defaultdict(dict)
    for params_json, source, M, N, K, ms in rows:
        p = json.loads(params_json)
        stages = p.pop("STAGES", None)
        key = ((M, N, K), tuple(sorted(p.items())), tuple(sorted((options_or_none(source) or {}).items())))
        best[key][stages] = min(ms, best[key].get(stages, math.inf))
    for (shape, genes, _), times in best.items():
        if 5 in times:
            for deeper in (6, 7):
                if deeper in times:
                    yield shape, dict(genes), deeper, times[5] / times[deeper]


def kind(g: dict) -> str:
    if g.get("SPLIT_K", 1) > 1 and not g.get("SPLIT_CLUSTER"):
        return f"split-K over L2, FIXUP={g.get('FIXUP', 0)}"
    if g.get("SPLIT_K", 1) > 1:
        return "cluster split-K"
    if g.get("TAIL_SPLIT", 1) > 1:
        return f"tail split, FIXUP={g.get('FIXUP', 0)}"
    return "no split"


found = defaultdict(list)
for path in sys.argv[1:]:
    for shape, genes, deeper, gain in pairs(path):
        found[(kind(genes), deeper)].append((gain, shape, path.rsplit("/", 1)[-1]))
print(f"{'kind':<32} {'stages':>6} {'pairs':>5} {'geomean 5/deeper':>16} {'min':>6} {'max':>6}")
for (k, deeper), got in sorted(found.items()):
    g = [x[0] for x in got]
    print(f"{k:<32} {deeper:>6} {len(g):>5} {math.exp(sum(map(math.log, g)) / len(g)):>16.3f} {min(g):>6.3f} {max(g):>6.3f}")
    for gain, shape, name in sorted(got)[:3] + sorted(got)[-3:] if len(got) > 6 else sorted(got):
        print(f"    {gain:.3f} {'x'.join(map(str, shape))} ({name})")
