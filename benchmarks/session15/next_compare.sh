#!/usr/bin/env bash
# For a later GPU session (NEXT.md item 4), one H200, ~8.5 minutes: `evo compare` on compare_gpu.sh's 14 shapes
# at 24 evaluations a shape, fast timing settings, re-timed side by side, after this session's shortlist
# change (deep-pipeline variants beside their picks). Default: shortlist, search and uniform, 3 seeds (issue
# 14's "REINFORCE >= uniform over 3 seeds"). Override ARMS and SEEDS for the other runs, e.g. the random arm
# once (issue 14's "95% of the best in a third of random's evaluations"):
#   OUT=/some/folder bash benchmarks/session15/next_compare.sh
#   OUT=/some/folder SEEDS=1 ARMS='[shortlist,search,random_tc]' bash benchmarks/session15/next_compare.sh
START=$(date +%s)
. benchmarks/device_common.sh
device_setup
mkdir -p /tmp/o
LEFT=$((570 - ($(date +%s) - START) - 30))
OUT=/tmp/o BUDGET=24 SEEDS=${SEEDS:-3} ARMS=${ARMS:-[shortlist,search,uniform]} LIMIT_S=$LEFT \
  EXTRA="evaluator.replays=3 evaluator.target_replay_ms=10 evaluator.draws=2" \
  bash benchmarks/search/compare_gpu.sh > "$OUT/compare.out" 2>&1
tail -45 "$OUT/compare.out"
device_done
cp "$OUT/gpu.txt" "$OUT/compare.out" /tmp/o/ && tar -czf "$OUT/compare.tgz" -C /tmp o
