#!/usr/bin/env bash
# Ninth session, fourth command, on the two-H200 machine (~9 minutes): evo compare at 24 evaluations per
# shape on the 14 shapes of compare_gpu.sh, 3 seeds, the search (REINFORCE) against the uniform-policy
# search and the shortlist sweep, both GPUs (issue 14: REINFORCE >= uniform over 3 seeds). The shortlist
# offers stream-K only where run_b measured it winning. Cut at 480 s (finished arms are tabulated).
#   OUT=/some/folder bash benchmarks/session9/run_d.sh
. benchmarks/device_common.sh
device_setup
rm -rf /tmp/s9c24  # a machine may keep /tmp from an earlier session: never mix its archives in
BUDGET=24 SEEDS=3 ARMS='[shortlist,search,uniform]' LIMIT_S=480 OUT=/tmp/s9c24 EVO_CACHE_DIR=/tmp/evo-cache \
  bash benchmarks/search/compare_gpu.sh > "$OUT/compare24_3seeds.log" 2>&1
cp /tmp/s9c24/compare24/compare.json "$OUT/compare24_3seeds.json"
tar czf "$OUT/compare24_3seeds_logs.tgz" -C /tmp/s9c24 --exclude='*.sqlite*' .
device_done
