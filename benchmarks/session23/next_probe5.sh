#!/usr/bin/env bash
# For the next GPU session (session23/NEXT.md item 1), one H200, ~5-7 minutes: mode_probe5.py over session
# 23's grid125 sweep: its first 120 kernels in the sweep's order, each twice in a row, then (a fresh
# worker) the 19 winners that `evo bench` read 0.2-0.3 us faster than the sweep, then those again with every
# CPU core busy (a sweep compiles beside its worker). Into $OUT/probe5.tgz.
# BACKEND=simulated: the plumbing on the CPU test double (modelled times).
#   OUT=/some/folder bash benchmarks/session23/next_probe5.sh
set -uo pipefail
OUT=${OUT:?}
BACKEND=${BACKEND:-gpu}
REPO=$PWD
R=/tmp/probe5 && rm -rf $R && mkdir -p $R
if [ "$BACKEND" = gpu ]; then . benchmarks/device_common.sh; device_setup
else export PROBE_SIMULATED=1; echo "SIMULATED (the CPU test double's modelled times, not measurements)" > $R/probe5.txt; fi
gunzip -c benchmarks/session23/grid125/grid125.sqlite.gz > $R/sweep.sqlite
tar -xzf benchmarks/session23/retime_grid125/retime.tgz -C $R && xz -dc $R/retime/grid125_bench.sqlite.xz > $R/bench.sqlite
SLOW=26,31,36,51,56,76,152,157,177,254,256,261,377,378,382,387,528,1266,1757
(cd /tmp && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout 330 python3 "$REPO/benchmarks/session23/mode_probe5.py" \
   $R/sweep.sqlite $R/bench.sqlite --first 120) >> $R/probe5.txt 2>&1
echo "--- a fresh worker: the slow group only" >> $R/probe5.txt
(cd /tmp && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout 120 python3 "$REPO/benchmarks/session23/mode_probe5.py" \
   $R/sweep.sqlite $R/bench.sqlite --ids $SLOW) >> $R/probe5.txt 2>&1
# a sweep compiles on every core while its worker times; the bench that read these kernels fast did not
echo "--- a fresh worker: the slow group only, with 16 busy CPU processes beside it (as a sweep's compiles)" >> $R/probe5.txt
BURN=(); for i in $(seq 16); do python3 -c "while True: pass" & BURN+=($!); done
(cd /tmp && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout 120 python3 "$REPO/benchmarks/session23/mode_probe5.py" \
   $R/sweep.sqlite $R/bench.sqlite --ids $SLOW) >> $R/probe5.txt 2>&1
kill "${BURN[@]}" 2>/dev/null
tail -70 $R/probe5.txt
if [ "$BACKEND" = gpu ]; then device_done; cp "$OUT/gpu.txt" $R/; fi
rm -rf $R/*.sqlite $R/retime && tar -czf "$OUT/probe5.tgz" -C /tmp probe5
