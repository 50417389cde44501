"""Each stream-K configuration a sweep measured, against the fastest configuration without stream-K on
the same shape in the same archive (>1: stream-K faster). `python3 streamk_vs_best.py ARCHIVE[.gz]`."""
import json
import sys

from evo.archive.store import Archive

QUERY = """
select e.M, e.N, e.K, min(e.time_ms), k.params_json from evaluations e join kernels k on k.id = e.kernel_id
where e.status = 'ok' group by e.M, e.N, e.K, k.params_json"""


def main(path: str) -> None:
    archive = Archive.open(path, readonly=True)  # reads a .sqlite.gz as it is
    rows = archive.db.execute(QUERY).fetchall()
    archive.close()
    best: dict[tuple, float] = {}
    streamk = []
    for M, N, K, t, params in rows:
        p = json.loads(params)
        if p.get("STREAM_K"):
            streamk.append(((M, N, K), t, p))
        else:
            best[(M, N, K)] = min(t, best.get((M, N, K), float("inf")))
    print(f"{'shape':>16}  {'best other / stream-K':>21}  stream-K tile")
    for shape, t, p in sorted(streamk, key=lambda x: -best[x[0]] / x[1]):
        tile = f"{p['BM']}x{p['BN']}/{p['CONSUMERS']}" + (" swap" if p.get("SWAP_AB") else "")
        print(f"{'x'.join(map(str, shape)):>16}  {best[shape] / t:21.3f}  {tile}")
    wins = sum(best[s] > t for s, t, _ in streamk)
    print(f"stream-K faster than every other configuration in {wins} of {len(streamk)} cases "
          f"on {len({s for s, _, _ in streamk})} shapes")


if __name__ == "__main__":
    main(sys.argv[1])
