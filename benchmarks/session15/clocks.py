"""Per shape of an archive: each library's time, SM clock and throttle flag, and the kernels' correct
evaluations (count, mean clock, how many throttled), to see whether the libraries ran at the kernels'
clocks (next_verify.sh).

    python benchmarks/session15/clocks.py /tmp/w8/big.sqlite
"""
import sqlite3
import sys

db = sqlite3.connect(sys.argv[1])
print(f"{'shape':<18} {'library':<20} {'us':>9} {'MHz':>6} throttled")
for m, n, k, lib, ms, mhz, hot in db.execute(
        "select M, N, K, library, time_ms, clock_mhz, throttled from baselines where status = 'ok' order by M * N * K, library"):
    print(f"{f'{m}x{n}x{k}':<18} {lib:<20} {ms * 1e3:>9.1f} {mhz or 0:>6.0f} {hot}")
print(f"\n{'shape':<18} {'kernels':>7} {'mean MHz':>8} {'throttled':>9}")
for m, n, k, count, mhz, hot in db.execute(
        "select M, N, K, count(*), avg(clock_mhz), sum(throttled) from evaluations where status = 'ok' "
        "group by M, N, K order by M * N * K"):
    print(f"{f'{m}x{n}x{k}':<18} {count:>7} {mhz or 0:>8.0f} {hot:>9}")
