#!/usr/bin/env bash
# Fourteenth session, one H200 (~7 minutes, what the device budget left): `evo compare` after this
# session's two hopper changes (the shortlist takes up to 7 stages for split-K over L2 with small stages;
# the search space takes up to 16 stages): shortlist, search and uniform, 2 seeds, 24 evaluations per shape
# on compare_gpu.sh's 14 shapes, fast timing settings, re-timed side by side.
#   OUT=/some/folder bash benchmarks/session14/run_d.sh
START=$(date +%s)
. benchmarks/device_common.sh
device_setup
mkdir -p /tmp/o
LEFT=$((440 - ($(date +%s) - START) - 30))
OUT=/tmp/o BUDGET=24 SEEDS=2 ARMS='[shortlist,search,uniform]' LIMIT_S=$LEFT \
  EXTRA="evaluator.replays=3 evaluator.target_replay_ms=10 evaluator.draws=2" \
  bash benchmarks/search/compare_gpu.sh > "$OUT/compare.out" 2>&1
tail -45 "$OUT/compare.out"
device_done
cp "$OUT/gpu.txt" "$OUT/compare.out" /tmp/o/ && tar -czf "$OUT/run_d.tgz" -C /tmp o
