"""Per-shape table of session 18's PDL A/B (pdl_mini.sh): each run's kernel time, best library time and their
ratio, from the four `evo bench` logs (runs 1 and 3 plain, 2 and 4 with evaluator.pdl=true).
    python benchmarks/session18/pdl_table.py benchmarks/session18/bench{1,2,3,4}.log"""
import math
import sys


def rows(path):
    out = {}
    for line in open(path):
        f = line.split()
        if len(f) == 20 and f[0].isdigit() and f[3] == "rotating":
            shape = "x".join(f[:3])
            libs = [float(f[i]) for i in (7, 10, 13)]
            out[shape] = (float(f[16]), min(libs), float(f[19]))
    return out


runs = [rows(p) for p in sys.argv[1:]]
print(f"{'shape':>16} " + " ".join(f"{'run' + str(i + 1) + ' us/lib/ratio':>24}" for i in range(len(runs))))
for shape in runs[0]:
    print(f"{shape:>16} " + " ".join(f"{r[shape][0]:7.2f} {r[shape][1]:7.2f} {r[shape][2]:6.3f}   " for r in runs))
for i, r in enumerate(runs):
    gk = math.exp(sum(math.log(v[0]) for v in r.values()) / len(r))
    gl = math.exp(sum(math.log(v[1]) for v in r.values()) / len(r))
    gr = math.exp(sum(math.log(v[2]) for v in r.values()) / len(r))
    print(f"run {i + 1}: geomean kernel {gk:.2f} us, best library {gl:.2f} us, ratio {gr:.3f}")
