"""GPU checks for the review findings. Run in a FRESH process on the H200:
   EXPORT=exported/ python /tmp/rt2_scratch/gpu_check.py   (an export with a split-K range, verified here)"""
import os, sys, threading, torch, evo.dispatch as ed
from evo.evaluation.tolerance import error_stats, verdict
EXP = os.environ["EXPORT"]; ed.configure(EXP, checked=False)
d = ed.default()
def ok(c, a, b): return verdict(error_stats(c.float(), a.float() @ b.float())) is None
# pick a split-K (reentrant: false) kernel and a served M of it
ent = {e["file"][:-3]: e for e in d.manifest["kernels"]}
t, r = next((t, r) for t in d.tables for r in t["ranges"] if r["segments"] and not ent[r["kernel"]]["reentrant"])
N, K, M = t["N"], t["K"], r["segments"][0]["m_hi"]
b = torch.randn(K, N, dtype=torch.half, device="cuda")

# F3: first call inside a CUDA-graph capture (nothing built yet in this process)
a = torch.randn(M, K, dtype=torch.half, device="cuda"); g = torch.cuda.CUDAGraph()
s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
try:
    with torch.cuda.graph(g): c = ed.matmul(a, b)
    g.replay(); torch.cuda.synchronize(); print("F3 capture-first-call ok:", ok(c, a, b))
except Exception as e: print("F3 capture-first-call FAILED:", type(e).__name__, e)
d.build()

# F1: one split-K kernel on two streams at once
print("F1", d.explain(a, b))
bad = 0
for _ in range(200):
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    a1, a2 = torch.randn(M, K, dtype=torch.half, device="cuda"), torch.randn(M, K, dtype=torch.half, device="cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(s1): c1 = ed.matmul(a1, b)
    with torch.cuda.stream(s2): c2 = ed.matmul(a2, b)
    torch.cuda.synchronize(); bad += (not ok(c1, a1, b)) + (not ok(c2, a2, b))
print("F1 wrong results on two streams:", bad, "/ 400")

# F2: gradients through torch.compile of evo.dispatch.matmul
x = torch.randn(M, K, dtype=torch.half, device="cuda", requires_grad=True)
y = torch.compile(lambda x: ed.matmul(x, b), fullgraph=True)(x); y.float().sum().backward()
print("F2 compiled grad:", None if x.grad is None else (x.grad.float() - b.float().sum(1)).abs().max().item())

# F5: a fresh thread whose first CUDA work is the evo launch
a = torch.randn(M, K, dtype=torch.half, device="cuda"); torch.cuda.synchronize(); out = {}
def th():
    try: out["c"] = ed.matmul(a, b); torch.cuda.synchronize(); out["ok"] = ok(out["c"], a, b)
    except Exception as e: out["err"] = f"{type(e).__name__}: {e}"
T = threading.Thread(target=th); T.start(); T.join(); print("F5 fresh thread:", out.get("ok"), out.get("err"))

# F8: autocast(bf16) dtype
with torch.autocast("cuda", dtype=torch.bfloat16):
    print("F8 autocast dtypes evo/torch:", ed.matmul(a, b).dtype, torch.matmul(a, b).dtype)

# F9: out-of-bounds writes at odd M (C inside a guarded buffer); check every served M of this range
for m in range(r["m_lo"], r["m_hi"] + 1):
    buf = torch.full((m + 256, N), 7.0, dtype=torch.half, device="cuda"); c = buf[128:128 + m]
    am = torch.randn(m, K, dtype=torch.half, device="cuda"); a0 = am.clone()
    ed.matmul(am, b, out=c); torch.cuda.synchronize()
    if not (buf[:128] == 7).all() or not (buf[128 + m:] == 7).all() or not torch.equal(am, a0) or not ok(c, am, b):
        print("F9 bad at M", m, d.explain(am, b))

# F10: biased Linear vs nn.Linear in graphs at small M (bias is a 2nd kernel; --verify timed no bias)
lin = torch.nn.Linear(K, N, bias=True).half().cuda(); ev = ed.Linear.from_linear(lin, d)
for m in (1, 3, 17):
    xx = torch.randn(m, K, dtype=torch.half, device="cuda")
    for name, f in (("nn", lin), ("evo", ev)):
        g = torch.cuda.CUDAGraph()
        with torch.no_grad():
            f(xx); torch.cuda.synchronize()
            with torch.cuda.graph(g):
                for _ in range(200): f(xx)
        e0, e1 = torch.cuda.Event(True), torch.cuda.Event(True); g.replay(); e0.record(); g.replay(); e1.record()
        torch.cuda.synchronize(); print(f"F10 M={m} {name} {e0.elapsed_time(e1) / 200 * 1000:.2f} us")
