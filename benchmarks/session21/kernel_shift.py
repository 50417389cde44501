"""Session 21: the same kernels on the same shapes in two archives (by parameters), the difference of their
best correct, unthrottled times: how many pairs moved by more than `--us` microseconds either way, how many
stayed within 0.1 us, and the libraries of the shapes they share beside them. Section 3 of the README.

    python benchmarks/session21/kernel_shift.py A.sqlite B.sqlite [--us 0.25] [--shape 1x768x3072]
"""
import argparse
import math
import sqlite3


def kernels(path: str) -> dict:
    db = sqlite3.connect(path)
    out: dict = {}
    for m, n, k, params, ms, eid in db.execute(
            "select e.M, e.N, e.K, k.params_json, e.time_ms, e.id from evaluations e join kernels k on k.id = e.kernel_id "
            "where e.status = 'ok' and not coalesce(e.throttled, 0)"):
        key = (m, n, k, params)
        if key not in out or ms < out[key][0]:
            out[key] = (ms * 1e3, eid)
    return out


def torch_times(path: str) -> dict:
    db = sqlite3.connect(path)
    return {(m, n, k): ms * 1e3 for m, n, k, ms in db.execute(
        "select M, N, K, time_ms from baselines where library = 'torch' and status = 'ok'")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--us", type=float, default=0.25)
    ap.add_argument("--shape", help="list this shape's pairs in B's evaluation order (MxNxK)")
    args = ap.parse_args()
    ka, kb = kernels(args.a), kernels(args.b)
    pairs = [(key, kb[key][0] - ka[key][0]) for key in ka if key in kb]
    slower = sum(d > args.us for _, d in pairs)
    faster = sum(d < -args.us for _, d in pairs)
    same = sum(abs(d) < 0.1 for _, d in pairs)
    small = [(key, d) for key, d in pairs if ka[key][0] < 15]
    print(f"{len(pairs)} kernel-shape pairs in both: B over {args.us} us slower {slower}, faster {faster}, "
          f"within 0.1 us {same}; of the {len(small)} under 15 us, {sum(args.us < d < 0.6 for _, d in small)} "
          f"slower by {args.us}-0.6 us")
    ta, tb = torch_times(args.a), torch_times(args.b)
    shapes = {key[:3] for key, _ in pairs} & set(ta) & set(tb)
    if shapes:
        r = [tb[s] / ta[s] for s in shapes]
        print(f"torch on their {len(shapes)} shapes, B / A: geomean {math.exp(sum(map(math.log, r)) / len(r)):.4f}, "
              f"beyond 3%: {sum(abs(x - 1) > 0.03 for x in r)}")
    if args.shape:
        shape = tuple(int(x) for x in args.shape.split("x"))
        rows = sorted((kb[key][1], ka[key][0], kb[key][0]) for key, _ in pairs if key[:3] == shape)
        print(f"{args.shape} in B's evaluation order (A us, B us): "
              + ", ".join(f"{x:.2f}/{y:.2f}" for _, x, y in rows))


if __name__ == "__main__":
    main()
