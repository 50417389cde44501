#!/usr/bin/env bash
# mode_probe6.py alone (20 evaluations between rounds, cut at 150 s), for a session with ~4 minutes of
# device time left. Into $OUT/probe6.txt.
#   OUT=/some/folder bash benchmarks/session30/run_probe.sh
set -uo pipefail
export OUT=${OUT:?}
. benchmarks/device_common.sh
device_setup > /dev/null
gunzip -c benchmarks/session28/grid125/grid125.sqlite.gz > /tmp/g28.sqlite
(cd /tmp && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout 150 python3 "$REPO/benchmarks/session30/mode_probe6.py" \
  /tmp/g28.sqlite --load 20 --busy 16) > "$OUT/probe6.txt" 2>&1
echo "probe6 rc=$?"; cat "$OUT/probe6.txt" | grep -v Warning | tail -34
