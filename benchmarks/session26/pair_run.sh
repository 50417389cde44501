#!/usr/bin/env bash
# Session 26, a GPU command (~9 minutes, one H200): pair_ab.py (ping-pong consumers in multicast pairs against
# the same kernels unpaired, session 23's sweep winners and the libraries, one run) on session 23's grid125
# and llm_layers shapes; then, in the time left of TOTAL_S (default 560), the GPU tests of the evaluator,
# evo.dispatch and the projection check. Into $OUT/pair.tgz.
#   OUT=/some/folder bash benchmarks/session26/pair_run.sh
# BACKEND=simulated: the plumbing on the CPU test double (modelled times; evo from the current environment).
set -uo pipefail
START=$(date +%s)
BACKEND=${BACKEND:-gpu}
. benchmarks/device_common.sh
if [ "$BACKEND" = gpu ]; then device_setup; else echo "SIMULATED: modelled times" > "$OUT/gpu.txt"; fi
R=/tmp/pair && rm -rf $R && mkdir -p $R
for s in grid125 llm_layers; do gunzip -c benchmarks/session23/$s/$s.sqlite.gz > $R/${s}23.sqlite; done
TOTAL_S=${TOTAL_S:-560}
(cd /tmp && python3 "$REPO/benchmarks/session26/pair_ab.py" $R/grid12523.sqlite $R/llm_layers23.sqlite --out $R/ab \
  --budget-s "${AB_S:-240}" --backend "$BACKEND") > $R/ab.log 2>&1
grep -v "^  " $R/ab.log | tail -60; grep -c "^  " $R/ab.log
LEFT=$((TOTAL_S - ($(date +%s) - START) - 30))
if [ "$BACKEND" = gpu ] && [ "$LEFT" -gt 30 ]; then
  gpu_tests $R/pytest_gpu.txt "$LEFT" -m gpu -rfEs gt/test_gpu.py gt/test_dispatch_gpu.py gt/test_projection.py
  cat $R/pytest_gpu.txt
fi
rm -f $R/grid12523.sqlite $R/llm_layers23.sqlite; gzip -f $R/ab/pair.sqlite
[ "$BACKEND" = gpu ] && device_done; cp "$OUT/gpu.txt" $R/
tar -czf "$OUT/pair.tgz" -C /tmp pair
