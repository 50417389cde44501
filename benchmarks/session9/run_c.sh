#!/usr/bin/env bash
# Ninth session, third command, on the two-H200 machine (~9.5 minutes): evo compare at 96 evaluations per
# shape on the 14 shapes of compare_gpu.sh, one seed, the search against the shortlist sweep, both GPUs
# (issue 14's second target; never run before). Cut at 520 s; a later command resumes from the kept copy.
#   OUT=/some/folder bash benchmarks/session9/run_c.sh
. benchmarks/device_common.sh
device_setup
BUDGET=96 SEEDS=1 ARMS='[search,shortlist]' LIMIT_S=520 OUT=/tmp/c96 EVO_CACHE_DIR=/tmp/evo-cache \
  bash benchmarks/search/compare_gpu.sh > "$OUT/compare96.log" 2>&1
tar czf "$OUT/compare96.tgz" -C /tmp/c96 .
device_done
