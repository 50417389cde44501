#!/usr/bin/env bash
# Session 32's first GPU command (~5 minutes): what sets a worker's slow launch mode (session 31, run 2).
# Session 31's run3.sh (fresh workers, 6 jobs each: FIXUP=1 split-K only, fp32-atomics split-K only, unsplit
# hopper only), then globals_probe.py twice (a simt kernel with an unused 33.8 MiB __device__ array, 5 jobs;
# the same jobs without it). Into $OUT/only_*.txt and $OUT/globals_*.txt. Shorter: STEPS=5 EACH_S=55 GLOBALS_S=50.
set -uo pipefail
export OUT=${OUT:?}
GLOBALS_S=${GLOBALS_S:-70}
bash benchmarks/session31/run3.sh
. benchmarks/device_common.sh
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1  # run3.sh installed evo there
for mib in 33.8 0; do
  (cd /tmp && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 PYTHONPATH="$PYTHONPATH:$REPO/benchmarks/session31" \
    timeout "$GLOBALS_S" python3 "$REPO/benchmarks/session32/globals_probe.py" --mib $mib --steps 5) > "$OUT/globals_$mib.txt" 2>&1
  echo "--mib $mib rc=$?"; grep -v Warning "$OUT/globals_$mib.txt" | tail -9
done
device_done > /dev/null
