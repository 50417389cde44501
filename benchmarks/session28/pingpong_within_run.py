#!/usr/bin/env python3
# Session 28: from a sweep archive, each shape's best speedup over the best library, with and without the
# ping-pong kernels (PINGPONG=1), all within the one run.  python3 pingpong_within_run.py A.sqlite [B.sqlite]
import json, math, sqlite3, sys
for db in sys.argv[1:]:
    c = sqlite3.connect(db)
    rows = c.execute("""select e.M,e.N,e.K,e.speedup,k.params_json from evaluations e join kernels k on k.id=e.kernel_id
                        where e.status='ok' and e.speedup is not null""").fetchall()
    best, best_np = {}, {}
    n_pp = {}
    for M, N, K, s, pj in rows:
        key = (M, N, K); pp = json.loads(pj).get("PINGPONG", 0) == 1
        best[key] = max(best.get(key, 0), s)
        if pp: n_pp[key] = n_pp.get(key, 0) + 1
        else: best_np[key] = max(best_np.get(key, 0), s)
    g = lambda d: math.exp(sum(math.log(d[k]) for k in best) / len(best))
    gain = {k: best[k] / best_np[k] for k in best if k in best_np}
    won = sorted((k for k in gain if gain[k] > 1), key=lambda k: -gain[k])
    print(f"{db}: {len(best)} shapes, {sum(n_pp.values())} ping-pong evaluations on {len(n_pp)} shapes; "
          f"geomean best {g(best):.4f}, without ping-pong {g(best_np):.4f}")
    print("  shapes a ping-pong kernel won, best / best without:", ", ".join(f"{k[0]}x{k[1]}x{k[2]} {gain[k]:.3f}" for k in won))
