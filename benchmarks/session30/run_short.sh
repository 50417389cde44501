#!/usr/bin/env bash
# run1.sh's two parts in the other order and shorter, for a session with ~7 minutes of device time left:
# mode_probe6.py (30 evaluations between rounds, cut at 170 s), then profile_small.sh on 4096x256x64 alone
# (cut at 200 s). Into $OUT/probe6.txt and $OUT/prof29.tgz.
#   OUT=/some/folder bash benchmarks/session30/run_short.sh
set -uo pipefail
export OUT=${OUT:?}
. benchmarks/device_common.sh
device_setup > /dev/null
gunzip -c benchmarks/session28/grid125/grid125.sqlite.gz > /tmp/g28.sqlite
(cd /tmp && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout 170 python3 "$REPO/benchmarks/session30/mode_probe6.py" \
  /tmp/g28.sqlite --load 30 --busy 16) > "$OUT/probe6.txt" 2>&1
echo "probe6 rc=$?"; tail -32 "$OUT/probe6.txt"
SHAPES="4096x256x64" timeout 200 bash benchmarks/session29/profile_small.sh > "$OUT/prof.log" 2>&1
echo "profile rc=$?"; tail -40 "$OUT/prof.log"
[ -f "$OUT/prof29.tgz" ] || tar -czf "$OUT/prof29.tgz" -C /tmp prof29  # cut short: what it had
