"""Issue 13's small-M target, read from run_b's llm_layers sweep: on shapes with M <= 64 and B of at least
32 MB, the bytes a GEMM must move (A and B read once, C written once) over the best time, as a fraction
of the device-to-device copy bandwidth run_a measured (4.26 TB/s, read + write), for our best kernel
and for the best library of the same run.

    python benchmarks/session14/small_m_bandwidth.py [benchmarks/session14/run_b/llm_layers.sqlite.xz]
"""
import lzma
import sqlite3
import sys
import tempfile
from pathlib import Path

from evo.core.summary import geomean

COPY_BYTES_PER_S = 4.26e12
path = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent / "run_b" / "llm_layers.sqlite.xz")
with tempfile.TemporaryDirectory() as tmp:
    db_path = Path(tmp) / "a.sqlite"
    db_path.write_bytes(lzma.open(path).read() if path.suffix == ".xz" else path.read_bytes())
    rows = sqlite3.connect(db_path).execute("select M, N, K, min(time_ms), min(best_library_ms) from evaluations "
                                            "where status = 'ok' group by M, N, K").fetchall()
out = []
for M, N, K, ours, lib in rows:
    if M <= 64 and 2 * K * N >= 32e6:
        moved = 2 * (M * K + K * N + M * N)
        out.append((f"{M}x{N}x{K}", moved / (ours * 1e-3) / COPY_BYTES_PER_S, moved / (lib * 1e-3) / COPY_BYTES_PER_S))
out.sort(key=lambda r: r[1])
print(f"{'shape':<16} {'ours / copy':>11} {'library / copy':>14}")
for shape, a, b in out:
    print(f"{shape:<16} {a:>11.2f} {b:>14.2f}")
print(f"{len(out)} shapes: geomean ours {geomean([r[1] for r in out]):.3f}, library {geomean([r[2] for r in out]):.3f}; "
      f"ours at >= 0.85 on {sum(r[1] >= 0.85 for r in out)}")
