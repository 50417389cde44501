"""The source of the fastest correct kernel per shape in one or more archives (.sqlite, .sqlite.xz or .gz), written
as SHAPE.cu into --out: the kernels `profile_worst.sh` profiles with ncu beside the library.

    python benchmarks/session15/winners_source.py --out /tmp/prof/cu run_b0/grid125_part0of2.sqlite.xz \
        run_b1/grid125_part1of2.sqlite.xz --shapes 4096x1024x256 16384x256x256
"""
import argparse
import gzip
import lzma
import shutil
import sqlite3
import tempfile
from pathlib import Path

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("archives", nargs="+")
ap.add_argument("--shapes", nargs="+", required=True)
ap.add_argument("--out", required=True)
args = ap.parse_args()
out = Path(args.out)
out.mkdir(parents=True, exist_ok=True)
best: dict[str, tuple[float, str, str]] = {}
with tempfile.TemporaryDirectory() as tmp:
    for i, path in enumerate(args.archives):
        db_path = path
        if path.endswith((".xz", ".gz")):
            db_path = f"{tmp}/{i}.sqlite"
            with (lzma.open(path) if path.endswith(".xz") else gzip.open(path)) as src, open(db_path, "wb") as dst:
                shutil.copyfileobj(src, dst)
        db = sqlite3.connect(db_path)
        for shape in args.shapes:
            m, n, k = map(int, shape.split("x"))
            row = db.execute("select e.time_ms, e.kernel_id, k.source from evaluations e join kernels k on k.id = e.kernel_id "
                             "where e.M = ? and e.N = ? and e.K = ? and e.status = 'ok' order by e.time_ms limit 1",
                             (m, n, k)).fetchone()
            if row and (shape not in best or row[0] < best[shape][0]):
                best[shape] = row
        db.close()
for shape in args.shapes:
    if shape not in best:
        print(f"{shape}: no correct kernel in the archives")
        continue
    ms, kid, source = best[shape]
    (out / f"{shape}.cu").write_text(source)
    print(f"{shape}: {kid[:12]} {ms * 1e3:.2f} us -> {out / (shape + '.cu')}")
