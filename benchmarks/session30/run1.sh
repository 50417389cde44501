#!/usr/bin/env bash
# Session 30's first GPU command (one GPU, <= 10 minutes; written for the next session, not yet run):
# overlap_probe.py (does a library gain from following itself in the evaluator's back-to-back graphs? cut at
# 120 s), mode_probe6.py (does a worker's kernel timing drift away from its library timing as it works? cut
# at 150 s), then session 29's profile_small.sh on two small shapes that cuBLASLt wins (cut at 220 s).
# Into $OUT/overlap.txt, $OUT/probe6.txt and $OUT/prof29.tgz.
#   OUT=/some/folder bash benchmarks/session30/run1.sh
set -uo pipefail
export OUT=${OUT:?}
. benchmarks/device_common.sh
device_setup > /dev/null
gunzip -c benchmarks/session28/grid125/grid125.sqlite.gz > /tmp/g28.sqlite
(cd /tmp && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout 120 python3 "$REPO/benchmarks/session30/overlap_probe.py" \
  /tmp/g28.sqlite) > "$OUT/overlap.txt" 2>&1
echo "overlap rc=$?"; grep -v Warning "$OUT/overlap.txt" | tail -24
(cd /tmp && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout 150 python3 "$REPO/benchmarks/session30/mode_probe6.py" \
  /tmp/g28.sqlite --load 30 --busy 16) > "$OUT/probe6.txt" 2>&1
echo "probe6 rc=$?"; grep -v Warning "$OUT/probe6.txt" | tail -32
SHAPES="4096x256x64 256x256x16384" timeout 220 bash benchmarks/session29/profile_small.sh > "$OUT/prof.log" 2>&1
echo "profile rc=$?"; tail -40 "$OUT/prof.log"
[ -f "$OUT/prof29.tgz" ] || tar -czf "$OUT/prof29.tgz" -C /tmp prof29  # cut short: what it had
