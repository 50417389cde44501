#!/usr/bin/env bash
# Session 27, a GPU command (~7 minutes, one GPU): the GPU tests, with the fresh-thread dispatch test first
# and its whole traceback (it failed in session 26, and session 27 changed evo_ops.cpp for it); then
# `evo selftest` in the time left of TOTAL_S (default 540). Into $OUT/tests.tgz.
#   OUT=/some/folder bash benchmarks/session27/tests_run.sh
set -uo pipefail
START=$(date +%s)
. benchmarks/device_common.sh; device_setup
R=/tmp/tests && rm -rf $R && mkdir -p $R
TESTS="gt/test_gpu.py gt/test_dispatch_gpu.py gt/test_projection.py"
gpu_tests $R/fresh_thread.txt 150 -m gpu --tb=long -rfEs gt/test_dispatch_gpu.py -k fresh_thread > /dev/null
tail -40 $R/fresh_thread.txt
gpu_tests $R/pytest_gpu.txt "${PYTEST_S:-260}" -m gpu --tb=short -rfEs $TESTS > /dev/null
grep -E "passed|failed|FAILED|ERROR|SKIPPED" $R/pytest_gpu.txt | tail -30
LEFT=$((${TOTAL_S:-540} - ($(date +%s) - START) - 15))
if [ "$LEFT" -gt 60 ]; then
  (cd /tmp && timeout "$LEFT" python3 -m evo selftest) > $R/selftest.txt 2>&1; echo "selftest rc=$?" >> $R/selftest.txt
  tail -25 $R/selftest.txt
fi
device_done; cp "$OUT/gpu.txt" $R/
tar -czf "$OUT/tests.tgz" -C /tmp tests
