#!/usr/bin/env bash
# Session 24, a GPU command (~4 minutes, one H200): session 23's changes that had not run on a GPU.
# With SELFTEST=1, first `evo selftest` (every deliberately bad kernel caught, including bad_oob_read.cu and
# bad_look_ahead.cu; pingpong_run.sh runs it too); then the GPU tests of the evaluator, evo.dispatch and
# the projection check. Into $OUT/item0.tgz.
#   OUT=/some/folder bash benchmarks/session24/item0.sh   (PYTEST_S: the GPU tests' cut, 330 s)
set -uo pipefail
. benchmarks/device_common.sh; device_setup
R=/tmp/item0 && rm -rf $R && mkdir -p $R
[ -n "${SELFTEST:-}" ] && { (cd /tmp && timeout 200 python3 -m evo selftest) > $R/selftest.txt 2>&1; echo "selftest rc=$?" >> $R/selftest.txt; tail -30 $R/selftest.txt; }
(cd /tmp && rm -rf gt && cp -r "$REPO/tests" /tmp/gt && timeout "${PYTEST_S:-330}" python3 -m pytest -q -p no:cacheprovider -rfEs \
  -m gpu gt/test_gpu.py gt/test_dispatch_gpu.py gt/test_projection.py) > $R/pytest_gpu.txt 2>&1
grep -E "passed|failed|FAILED|ERROR|SKIPPED" $R/pytest_gpu.txt | tail -30
device_done; cp "$OUT/gpu.txt" $R/
tar -czf "$OUT/item0.tgz" -C /tmp item0
