#!/usr/bin/env bash
# Session 32's shortened first GPU command (~2.5 minutes; run1.sh did not get a machine): the globals probe
# first (33.8 MiB, then none), then session 31's --only fixup / atomics / plain runs, 5 jobs each, each cut
# at EACH_S seconds. Into $OUT/globals_*.txt and $OUT/only_*.txt.
set -uo pipefail
export OUT=${OUT:?}
EACH_S=${EACH_S:-45}
. benchmarks/device_common.sh
device_setup > /dev/null
gunzip -c benchmarks/session28/grid125/grid125.sqlite.gz > /tmp/g28.sqlite
cd /tmp
export EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 PYTHONPATH="$PYTHONPATH:$REPO/benchmarks/session31"
for mib in 33.8 0; do
  timeout "$EACH_S" python3 "$REPO/benchmarks/session32/globals_probe.py" --mib $mib --steps 5 > "$OUT/globals_$mib.txt" 2>&1
  echo "--mib $mib rc=$?"; grep -v Warning "$OUT/globals_$mib.txt" | tail -9
done
for only in fixup atomics plain; do
  timeout "$EACH_S" python3 "$REPO/benchmarks/session31/mode_trigger.py" /tmp/g28.sqlite --steps 5 --only $only \
    > "$OUT/only_$only.txt" 2>&1
  echo "--only $only rc=$?"; grep -v Warning "$OUT/only_$only.txt" | tail -9
done
cd "$REPO" && device_done > /dev/null
