"""End to end: one Llama-3-8B transformer block, evo kernels vs plain PyTorch, tokens/s.

The block: RMSNorm, fused qkv projection (6144x4096), grouped-query attention (32 query heads,
8 key/value heads, torch SDPA), output projection (4096x4096), RMSNorm, fused gate+up projection
(28672x4096), SiLU-gated product, down projection (4096x14336); fp16, random weights (std 0.02).
The evo copy is the same module after `evo.dispatch.patch` (its four Linears become
evo.dispatch.Linear where the export has their (N, K); each call then takes the kernel the
re-checked table gives for its M, or torch). Prefill: one sequence of T tokens (M = T). Decode: B
sequences, one new token each (M = B; attention over that token only, no KV cache: the GEMM shapes
are those of decoding, the attention part is not). Eager and CUDA graphs; outputs compared with
the plain block's (normwise relative error). A third copy, `forced`, runs every exported kernel in
range whatever its re-check said (never-slower off), to show what that rule saves; it is labelled
as such and is not what evo.dispatch does. A fourth, `torch-only`, has every Linear of an exported
(N, K) replaced by evo.dispatch.Linear on a table that uses no kernel (every call takes the torch
path): its x against plain is the fallback path's own cost, which a model pays where no kernel runs.
Times are medians of 9 rounds of 50 forwards, the four copies measured in turns; eager columns show
the min-max over rounds of each copy's x against plain in the same round (a spread that holds 1 is
noise, not cost).
Usage (GPU machine): python3 benchmarks/dispatch/block.py EXPORT_DIR [OUT.json]
"""
import copy
import json
import statistics
import sys

import torch
import torch.nn.functional as F

import evo.dispatch

D, HEADS, KV_HEADS, FFN = 4096, 32, 8, 14336
CASES = [("prefill", 1, 512), ("prefill", 1, 200), ("decode", 1, 1), ("decode", 8, 1), ("decode", 32, 1)]


class RMSNorm(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(x.dtype) * self.weight


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        hd = D // HEADS
        self.norm1, self.norm2 = RMSNorm(D), RMSNorm(D)
        self.qkv = torch.nn.Linear(D, D + 2 * KV_HEADS * hd, bias=False)
        self.o = torch.nn.Linear(D, D, bias=False)
        self.gate_up = torch.nn.Linear(D, 2 * FFN, bias=False)
        self.down = torch.nn.Linear(FFN, D, bias=False)

    def forward(self, x):
        b, t, _ = x.shape
        hd = D // HEADS
        q, k, v = self.qkv(self.norm1(x)).split([D, KV_HEADS * hd, KV_HEADS * hd], dim=-1)
        q = q.view(b, t, HEADS, hd).transpose(1, 2)
        k = k.view(b, t, KV_HEADS, hd).transpose(1, 2)
        v = v.view(b, t, KV_HEADS, hd).transpose(1, 2)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=t > 1, enable_gqa=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, D))
        g, u = self.gate_up(self.norm2(x)).chunk(2, dim=-1)
        return x + self.down(F.silu(g) * u)


def eager_ms(model, x, iters=50):
    """Per-forward time of iters eager forwards in a row (host cost included, as a model sees it)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        model(x)
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / iters


def capture(model, x):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            model(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        model(x)
    g.replay()
    return g


def graph_ms(g, iters=50):
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        g.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / iters


def rounds_of(measure, things, rounds=9):
    """`rounds` measurements of each thing, taken in turns (plain, evo, forced, torch-only, plain, ...)
    so that a drift of clocks or temperature during the run falls on all of them alike."""
    times = [[] for _ in things]
    for _ in range(rounds):
        for t, thing in zip(times, things):
            t.append(measure(thing))
    return times


def ratios(times):
    """Per copy after the first: (median x, min x, max x) of plain's time / its time, round by round."""
    out = []
    for t in times[1:]:
        xs = [p / q for p, q in zip(times[0], t)]
        out.append((statistics.median(times[0]) / statistics.median(t), min(xs), max(xs)))
    return out


def main(folder, out_path=None):
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(0)
    evo.dispatch.configure(folder)
    plain = Block().half().cuda().eval()
    with torch.no_grad():
        for p in plain.parameters():
            if p.dim() == 2:
                p.normal_(0, 0.02)
    fast = copy.deepcopy(plain)
    print("patched:", evo.dispatch.patch(fast))
    every = evo.dispatch.Dispatcher(folder, checked=False)
    for table in every.tables:
        for rng in table["ranges"]:
            rng["use"] = True  # the forced copy: never-slower off
    forced = copy.deepcopy(plain)
    evo.dispatch.patch(forced, every)
    none = evo.dispatch.Dispatcher(folder, checked=False)
    for table in none.tables:
        for rng in table["ranges"]:
            rng["use"] = False  # the torch-only copy: every call on the fallback path
    torch_only = copy.deepcopy(plain)
    exported = {(t["N"], t["K"]) for t in none.tables}
    for name in ("qkv", "o", "gate_up", "down"):
        layer = getattr(torch_only, name)
        if (layer.out_features, layer.in_features) in exported:
            setattr(torch_only, name, evo.dispatch.Linear.from_linear(layer, none))
    print("torch-only (evo.dispatch.Linear, no kernel):",
          [n for n in ("qkv", "o", "gate_up", "down") if isinstance(getattr(torch_only, n), evo.dispatch.Linear)])
    rows = []
    print(f"{'case':>7} {'M':>4} {'eager tok/s plain':>17} {'evo':>8} {'x (min-max)':>19} {'torch-only x (min-max)':>22} "
          f"{'forced x':>8} {'graph x':>7} {'t-only':>6} {'forced':>6} {'rel_err':>8}  paths (qkv, o, gate_up, down)")
    with torch.inference_mode():
        for case, b, t in CASES:
            x = torch.randn(b, t, D, dtype=torch.float16, device="cuda")
            ref, got, got_forced, got_t = plain(x), fast(x), forced(x), torch_only(x)
            err = max(((y.float() - ref.float()).norm() / ref.float().norm()).item() for y in (got, got_forced, got_t))
            paths = []
            for name in ("qkv", "o", "gate_up", "down"):
                layer = getattr(fast, name)
                a = torch.empty(b * t, layer.in_features, dtype=torch.float16, device="cuda")
                paths.append(evo.dispatch.explain(a, layer.weight_t).split(":")[0]
                             if isinstance(layer, evo.dispatch.Linear) else "torch")
            models = (plain, fast, forced, torch_only)
            for model in models:  # warm-up: the first calls (cuBLAS heuristics, allocator) are not timed
                for _ in range(3):
                    model(x)
            e_times = rounds_of(lambda model, x=x: eager_ms(model, x), models)
            g_times = rounds_of(graph_ms, [capture(model, x) for model in models])
            (ex, ex_lo, ex_hi), (fx, _, _), (tx, tx_lo, tx_hi) = ratios(e_times)
            gx, gfx, gtx = (r[0] for r in ratios(g_times))
            tok = b * t
            e_plain, e_fast = statistics.median(e_times[0]), statistics.median(e_times[1])
            g_plain, g_fast = statistics.median(g_times[0]), statistics.median(g_times[1])
            row = {"case": case, "B": b, "T": t, "M": tok, "eager_tok_s": [tok / e_plain * 1e3, tok / e_fast * 1e3],
                   "graph_tok_s": [tok / g_plain * 1e3, tok / g_fast * 1e3], "rel_err": err, "paths": paths,
                   "eager_x": [ex, ex_lo, ex_hi], "torch_only_eager_x": [tx, tx_lo, tx_hi], "forced_eager_x": fx,
                   "graph_x": gx, "torch_only_graph_x": gtx, "forced_graph_x": gfx,
                   "eager_ms": e_times, "graph_ms": g_times}
            rows.append(row)
            print(f"{case:>7} {tok:>4} {row['eager_tok_s'][0]:>17.0f} {row['eager_tok_s'][1]:>8.0f} "
                  f"{ex:>6.3f} ({ex_lo:.3f}-{ex_hi:.3f}) {tx:>8.3f} ({tx_lo:.3f}-{tx_hi:.3f}) {fx:>8.3f} "
                  f"{gx:>7.3f} {gtx:>6.3f} {gfx:>6.3f} {err:>8.1e}  {', '.join(paths)}")
            if out_path:
                json.dump(rows, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:])
