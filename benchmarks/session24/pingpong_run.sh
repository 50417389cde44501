#!/usr/bin/env bash
# Session 24, second GPU command (~9 minutes, one H200): ping-pong consumers (hopper PINGPONG, new). First their
# correctness on the coverage set (the 1000-shape grid, llm_layers and unaligned shapes; only the coverage
# check's PINGPONG configurations), then pingpong_ab.py against session 23's grid125 and llm_layers sweep
# winners, libraries in the same run; then `evo selftest` (session 23's new cases among them). Into $OUT/pingpong.tgz.
#   OUT=/some/folder bash benchmarks/session24/pingpong_run.sh
# BACKEND=simulated: the script's plumbing on the CPU test double (modelled times; evo from the current
# environment, no coverage check, the selftest on the test double).
set -uo pipefail
START=$(date +%s)
BACKEND=${BACKEND:-gpu}
. benchmarks/device_common.sh
if [ "$BACKEND" = gpu ]; then device_setup; else COVERAGE_S=0; echo "SIMULATED: modelled times" > "$OUT/gpu.txt"; fi
R=/tmp/pingpong && rm -rf $R && mkdir -p $R/coverage
for s in grid125 llm_layers; do gunzip -c benchmarks/session23/$s/$s.sqlite.gz > $R/${s}23.sqlite; done
if [ "${COVERAGE_S:-75}" -gt 0 ]; then
  (cd /tmp && EVO_COVERAGE_ONLY=PINGPONG timeout -s INT "${COVERAGE_S:-75}" python3 "$REPO/benchmarks/seeds/coverage_check.py" \
    $R/coverage hopper) > $R/coverage.log 2>&1
  tail -12 $R/coverage.log
fi
TOTAL_S=${TOTAL_S:-560}  # the whole command; the selftest (140 s) runs only where TOTAL_S leaves it room
SELFTEST_S=$(( TOTAL_S >= 450 ? 150 : 0 ))
LEFT=$((TOTAL_S - ($(date +%s) - START) - 40 - SELFTEST_S))
(cd /tmp && python3 "$REPO/benchmarks/session24/pingpong_ab.py" $R/grid12523.sqlite $R/llm_layers23.sqlite --out $R/ab \
  --budget-s $LEFT --max-shapes "${MAX_SHAPES:-0}" --backend "$BACKEND") > $R/ab.log 2>&1
grep -v "^  " $R/ab.log | tail -100
if [ "$SELFTEST_S" -gt 0 ]; then
  (cd /tmp && timeout 140 python3 -m evo selftest $([ "$BACKEND" = gpu ] || echo evaluator=simulated)) > $R/selftest.txt 2>&1; echo "selftest rc=$?" >> $R/selftest.txt
  tail -25 $R/selftest.txt
fi
rm -f $R/grid12523.sqlite $R/llm_layers23.sqlite; gzip -f $R/ab/pingpong.sqlite
[ "$BACKEND" = gpu ] && device_done; cp "$OUT/gpu.txt" $R/
tar -czf "$OUT/pingpong.tgz" -C /tmp pingpong
