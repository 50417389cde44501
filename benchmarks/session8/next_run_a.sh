#!/usr/bin/env bash
# Prepared at the end of the eighth session for the next GPU session (NEXT.md item 0), on the two-H200
# machine, about 5 minutes: the first GPU run of hopper's STREAM_K gene.
#  GPU 0: benchmarks/session8/streamk_check.py: stream-K kernels beside the same tiles without it and
#         with a tail split, libraries in the same run, 12 shapes (correctness, time, ratio);
#  GPU 1: the hopper coverage check, whose EXTRA now holds four STREAM_K configurations (correctness
#         on the 1000-shape grid, llm_layers and the unaligned shapes).
#   OUT=/some/folder bash benchmarks/session8/next_run_a.sh
# CHECK=path/to/another_check.py runs that check on GPU 0 instead (benchmarks/session9/next_run_a.sh);
# CHECK_S and COVERAGE_S cut the two (default 280 seconds each).
CHECK=${CHECK:-benchmarks/session8/streamk_check.py}
. benchmarks/device_common.sh
device_setup
export PYTHONSAFEPATH=1
(
  export CUDA_VISIBLE_DEVICES=0 EVO_CACHE_DIR=/tmp/evo-cache0
  cd /tmp && date -u
  timeout -s INT "${CHECK_S:-280}" python3 "$REPO/$CHECK"
  date -u
) > "$OUT/$(basename "$CHECK" .py).log" 2>&1 &
A=$!
(
  export CUDA_VISIBLE_DEVICES=1 EVO_CACHE_DIR=/tmp/evo-cache1
  cd /tmp && date -u
  timeout -s INT "${COVERAGE_S:-280}" python3 "$REPO/benchmarks/seeds/coverage_check.py" /tmp/coverage hopper 2>&1 | tail -14
  gzip -c /tmp/coverage/coverage.csv > "$OUT/coverage_hopper.csv.gz"
  date -u
) > "$OUT/coverage_hopper.log" 2>&1 &
B=$!
wait $A $B
device_done
