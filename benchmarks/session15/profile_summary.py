"""profile_worst.sh's ncu profiles side by side: per shape, our winner's one profiled launch (ours_SHAPE.csv)
and the median of torch.mm's profiled calls (lib.csv, shapes in the order lib_profile.py ran them; its
random fills left out): duration, DRAM traffic and throughput, SM throughput, L2 hit rate, registers,
achieved occupancy, grid, block and cluster.

    python benchmarks/session15/profile_summary.py /tmp/prof 4096x1024x256 16384x256x256 ...
"""
import csv
import io
import statistics
import sys
from collections import defaultdict
from pathlib import Path


def launches(path: Path) -> dict[int, dict]:
    """ncu's --csv rows (one per metric) gathered into one dict per profiled launch, by launch ID."""
    rows = list(csv.reader(io.StringIO(path.read_text()))) if path.exists() else []
    head = next((i for i, r in enumerate(rows) if r and r[0] == "ID"), None)
    out: dict[int, dict] = defaultdict(dict)
    if head is None:
        return out
    for r in rows[head + 1:]:
        d = dict(zip(rows[head], r))
        out[int(d["ID"])].update(name=d["Kernel Name"], grid=d["Grid Size"], block=d["Block Size"],
                                 **{d["Metric Name"]: d["Metric Value"]})
    return out


def num(s: str | None) -> float:
    return float(s.replace(",", "")) if s else float("nan")  # nan: a counter ncu did not give


def row(who: str, shape: str, ks: list[dict]) -> str:
    med = lambda m: statistics.median(num(k.get(m)) for k in ks)  # noqa: E731
    k = ks[0]
    mb = med("dram__bytes_read.sum") / 1e6, med("dram__bytes_write.sum") / 1e6
    return (f"{shape:<16} {who:<6} {k['name'][:40]:<40} {med('gpu__time_duration.sum') / 1000:>8.2f} "
            f"{mb[0]:>8.1f} {mb[1]:>8.1f} {med('dram__throughput.avg.pct_of_peak_sustained_elapsed'):>6.1f} "
            f"{med('sm__throughput.avg.pct_of_peak_sustained_elapsed'):>6.1f} {med('lts__t_sector_hit_rate.pct'):>6.1f} "
            f"{k.get('launch__registers_per_thread', '-'):>4} {med('sm__warps_active.avg.pct_of_peak_sustained_active'):>6.1f} "
            f"{k['grid']:>14} {k['block']:>12} {k['launch__cluster_dim_x']}x{k['launch__cluster_dim_y']}")


folder, shapes = Path(sys.argv[1]), sys.argv[2:]
lib = launches(folder / "lib.csv")
groups: dict[int, list[dict]] = defaultdict(list)  # each shape: 2 random fills, then 6 calls of the library
shape_i, in_fill = -1, False
for i in sorted(lib):
    if "distribution_elementwise" in lib[i]["name"]:
        shape_i += 0 if in_fill else 1
        in_fill = True
        continue
    in_fill = False
    groups[shape_i].append(lib[i])
print(f"{'shape':<16} {'who':<6} {'kernel':<40} {'us':>8} {'DRAM rd':>8} {'DRAM wr':>8} {'DRAM%':>6} {'SM%':>6} "
      f"{'L2hit':>6} {'regs':>4} {'occup':>6} {'grid':>14} {'block':>12} cluster")
for si, shape in enumerate(shapes):
    ours = [k for k in launches(folder / f"ours_{shape}.csv").values() if "hgemm" in k["name"]]
    print(row("ours", shape, ours) if ours else f"{shape:<16} ours   (no profile: see ours_{shape}.err)")
    theirs = groups.get(si, [])
    by_name: dict[str, list[dict]] = defaultdict(list)
    for k in theirs:
        by_name[k["name"]].append(k)
    for ks in by_name.values():
        print(row("torch", shape, ks))
