#!/usr/bin/env bash
# Thirteenth session, one H200, two commands of ~10 minutes (run it twice; between them copy the first
# command's compare24/ out of its tarball into benchmarks/search/compare24_h200/, which the second
# continues from): (1) the GPU test that failed in run_a (simt on 1x1x1: fp16 subnormal outputs, fixed in
# tolerance.py) and the selftest; (2) REINFORCE against uniform, 3 seeds, with the shortlist, 24
# evaluations per shape on compare_gpu.sh's 14 shapes, fast timing settings, re-timed side by side.
#   OUT=/some/folder bash benchmarks/session13/run_b.sh
START=$(date +%s)
. benchmarks/device_common.sh
device_setup
(cd /tmp && rm -rf gt && cp -r "$REPO/tests" /tmp/gt && timeout 120 python3 -m pytest -q -p no:cacheprovider gt/test_gpu.py \
   -k "simt_is_correct or selftest" 2>&1 | tail -6) > "$OUT/pytest_gpu.txt"
cat "$OUT/pytest_gpu.txt"
mkdir -p /tmp/o
LEFT=$((570 - ($(date +%s) - START) - 40))
OUT=/tmp/o BUDGET=24 SEEDS=3 ARMS='[shortlist,search,uniform]' LIMIT_S=$LEFT \
  EXTRA="evaluator.replays=3 evaluator.target_replay_ms=10 evaluator.draws=2" \
  bash benchmarks/search/compare_gpu.sh > "$OUT/compare.out" 2>&1
tail -40 "$OUT/compare.out"
device_done
tar -czf "$OUT/compare24.tgz" -C /tmp/o .
