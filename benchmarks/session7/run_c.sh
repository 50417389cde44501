#!/usr/bin/env bash
# Seventh session, third command, on the two-H200 machine (about 9 minutes). Nothing timed for a ratio
# runs beside the selftest (it disturbed the other GPU's timings in benchmarks/session6/run_b):
#  GPU 0: main with the fp16 projection check (branch proj): its GPU tests against the fp32 check it
#         replaced (with old/new timings), evo selftest (every deliberately bad kernel still caught), then
#         the quick preset cold, cut at 80 s, as benchmarks/session6/run_d.sh measured it;
#  GPU 1: the coverage check of every family (correctness only, no timing), so that "shapes without a
#         correct kernel" counts all families together.
# (Restated over benchmarks/device_common.sh after the run: the same commands.)
#   OUT=/some/folder bash benchmarks/session7/run_c.sh
. benchmarks/device_common.sh
device_setup
(
  export CUDA_VISIBLE_DEVICES=0 EVO_CACHE_DIR=/tmp/evo-cache0
  echo "== $(date -u +%H:%M:%S) projection GPU tests"
  timeout 150 python3 -m pytest -q -m gpu -k projection -s -p no:cacheprovider tests/test_projection.py 2>&1 | tail -40
  export PYTHONSAFEPATH=1
  mkdir -p /tmp/w && cd /tmp/w
  echo "== $(date -u +%H:%M:%S) selftest"
  timeout 170 evo selftest evaluator.timeout_s=20 > "$OUT/selftest.log" 2>&1; echo "selftest exit $?"
  tail -3 "$OUT/selftest.log"
  echo "== $(date -u +%H:%M:%S) quick cold"
  t0=$(date +%s.%N)
  timeout 80 evo run +experiment=quick llm=none 'evaluator.gpus=[0]' search.progress=false \
    archive.path=/tmp/w/quick_cold.sqlite > "$OUT/quick_cold.log" 2>&1
  echo "quick exit $?"
  python3 "$REPO/benchmarks/cluster/throughput.py" "quick_cold=/tmp/w/quick_cold.sqlite:$(python3 -c "print($(date +%s.%N) - $t0)")" \
    2>&1 | tee "$OUT/quick_throughput.txt"
  echo "== $(date -u +%H:%M:%S) done"
) > "$OUT/gpu0.log" 2>&1 &
A=$!
(
  export CUDA_VISIBLE_DEVICES=1 EVO_CACHE_DIR=/tmp/evo-cache1 PYTHONSAFEPATH=1
  cd /tmp && date -u
  timeout -s INT 480 python3 "$REPO/benchmarks/seeds/coverage_check.py" /tmp/coverage hopper ampere skinny simt 2>&1 | tail -40
  date -u
  gzip -c /tmp/coverage/coverage.csv > "$OUT/coverage_all.csv.gz"
) > "$OUT/coverage.log" 2>&1 &
B=$!
wait $A $B
device_done
