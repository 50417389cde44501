#!/usr/bin/env bash
# Session 31's third GPU command (~3 minutes): run2 found the slow mode set by the 16th job, the first with
# FIXUP=1 (hopper split-K with ordered partials over L2), plain or PDL alike. Fresh workers, 6 jobs each:
# only FIXUP=1 kernels; only split-K kernels with fp32 atomics (the same module globals, another code path);
# only unsplit hopper kernels. Into $OUT/only_*.txt.
set -uo pipefail
export OUT=${OUT:?}
STEPS=${STEPS:-6} EACH_S=${EACH_S:-70}
. benchmarks/device_common.sh
device_setup > /dev/null
gunzip -c benchmarks/session28/grid125/grid125.sqlite.gz > /tmp/g28.sqlite
for only in fixup atomics plain; do
  (cd /tmp && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout "$EACH_S" python3 \
    "$REPO/benchmarks/session31/mode_trigger.py" /tmp/g28.sqlite --steps "$STEPS" --only $only) > "$OUT/only_$only.txt" 2>&1
  echo "--only $only rc=$?"; grep -v Warning "$OUT/only_$only.txt" | tail -12
done
