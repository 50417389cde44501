#!/usr/bin/env bash
# Session 30's first GPU command (one GPU, <= 10 minutes): session29/NEXT.md item 4, the profile of three
# small shapes that cuBLASLt wins (session29/profile_small.sh, cut at 280 s), then mode_probe6.py (does a
# worker's kernel timing drift away from its library timing as it works? cut at 200 s).
# Into $OUT/prof29.tgz (the profile) and $OUT/probe6.txt.
#   OUT=/some/folder bash benchmarks/session30/run1.sh
set -uo pipefail
export OUT=${OUT:?}
SHAPES="4096x256x64 64x16384x64 256x256x16384" timeout 280 bash benchmarks/session29/profile_small.sh > "$OUT/prof.log" 2>&1
echo "profile rc=$?"; tail -45 "$OUT/prof.log"
[ -f "$OUT/prof29.tgz" ] || tar -czf "$OUT/prof29.tgz" -C /tmp prof29  # cut short: what it had
. benchmarks/device_common.sh
device_setup > /dev/null
gunzip -c benchmarks/session28/grid125/grid125.sqlite.gz > /tmp/g28.sqlite
(cd /tmp && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout 200 python3 "$REPO/benchmarks/session30/mode_probe6.py" \
  /tmp/g28.sqlite --load 40 --busy 16) > "$OUT/probe6.txt" 2>&1
echo "probe6 rc=$?"; tail -32 "$OUT/probe6.txt"
device_done > /dev/null
