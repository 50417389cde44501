"""The library kernels of run_b's ncu profile (lib_ncu.csv from lib_profile.py), one row per kernel and
shape: median duration, grid, cluster, DRAM bytes and throughput. The shapes come in the order
lib_profile.py ran them; torch's random-fill kernels are left out.

    python benchmarks/session14/ncu_summary.py run_b/lib_ncu.csv.xz 64x4096x4096 77x4096x4096 ...
"""
import csv
import io
import lzma
import statistics
import sys
from collections import defaultdict

path, shapes = sys.argv[1], sys.argv[2:]
text = lzma.open(path, "rt").read() if path.endswith(".xz") else open(path).read()
rows = [r for r in csv.reader(io.StringIO(text))]
head = next(i for i, r in enumerate(rows) if r and r[0] == "ID")
launches = defaultdict(dict)
for r in rows[head + 1:]:
    d = dict(zip(rows[head], r))
    launches[int(d["ID"])].update(name=d["Kernel Name"], grid=d["Grid Size"], **{d["Metric Name"]: d["Metric Value"]})
# each shape: 2 random fills, then 6 calls of one or two library kernels
groups, shape_i, seen_fill = defaultdict(list), -1, False
for i in sorted(launches):
    k = launches[i]
    if "distribution_elementwise" in k["name"]:
        if not seen_fill:
            shape_i += 1
        seen_fill = True
        continue
    seen_fill = False
    groups[(shape_i, k["name"])].append(k)
num = lambda s: float(s.replace(",", ""))
print(f"{'shape':<16} {'kernel':<52} {'us':>6} {'grid':>12} {'cluster':>7} {'DRAM MB':>8} {'DRAM %':>6}")
for (si, name), ks in sorted(groups.items()):
    us = statistics.median(num(k["gpu__time_duration.sum"]) for k in ks) / 1000
    mb = statistics.median(num(k["dram__bytes_read.sum"]) + num(k["dram__bytes_write.sum"]) for k in ks) / 1e6
    pct = statistics.median(num(k["dram__throughput.avg.pct_of_peak_sustained_elapsed"]) for k in ks)
    cl = f"{ks[0]['launch__cluster_dim_x']}x{ks[0]['launch__cluster_dim_y']}"
    shape = shapes[si] if si < len(shapes) else si
    print(f"{shape:<16} {name[:52]:<52} {us:>6.2f} {ks[0]['grid']:>12} {cl:>7} {mb:>8.1f} {pct:>6.1f}")
