"""What the winning kernels of a sweep compile to: registers, spills, and the SASS instruction mix
(HGMMA = Hopper tensor-core MMA, UTMALDG = TMA loads, LDL/STL = local-memory spills).

Usage (a machine with nvcc and cuobjdump): python3 benchmarks/seeds/sass_summary.py ARCHIVE.sqlite
"""
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from evo.archive import Archive
from evo.evaluation.compiler import Compiler

#: REDG: the global-memory reduction (split-K's fp32 adds in L2) as Hopper's SASS names it (RED on older GPUs)
OPCODES = ("HGMMA", "HMMA", "UTMALDG", "LDSM", "LDGSTS", "STG", "RED", "REDG", "LDL", "STL", "BAR", "SYNCS", "UCGABAR")


def main(path: str) -> None:
    db = Archive.open(path, readonly=True).db  # .sqlite.gz read as it is
    winners = Counter(r["kernel_id"] for r in db.query("select kernel_id from elites"))
    compiler = Compiler()
    rows = {kid: next(db.query("select family, source, params_json from kernels where id = ?", [kid])) for kid in winners}
    results = dict(zip(rows, compiler.compile_many([r["source"] for r in rows.values()])))  # in parallel
    print(f"{'kernel':12}  {'shapes won':>10}  {'family':7} {'regs':>4} {'spill':>5}  " + " ".join(f"{o:>7}" for o in OPCODES))
    for kid, wins in winners.most_common():
        row, result = rows[kid], results[kid]
        with tempfile.TemporaryDirectory() as tmp:
            cubin = Path(tmp) / "k.cubin"
            cubin.write_bytes(result.cubin)
            sass = subprocess.run(["cuobjdump", "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
        ops = Counter(m.group(1).split(".")[0] for m in re.finditer(r"/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z0-9_.]+)", sass))
        r = result.resources
        print(f"{kid[:12]:12}  {wins:>10}  {row['family']:7} {r.registers:>4} {r.spill_stores + r.spill_loads:>5}  "
              + " ".join(f"{ops.get(o, 0):>7}" for o in OPCODES) + f"  {row['params_json']}")


if __name__ == "__main__":
    main(sys.argv[1])
