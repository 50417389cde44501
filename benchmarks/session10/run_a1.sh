#!/usr/bin/env bash
# run_a.sh on one H200 (the two-GPU machine was not lent): the checks, then the coverage check, one
# after the other, each cut shorter (about 9.5 minutes in all).
#   OUT=/some/folder bash benchmarks/session10/run_a1.sh
. benchmarks/device_common.sh
device_setup
export PYTHONSAFEPATH=1 CUDA_VISIBLE_DEVICES=0 EVO_CACHE_DIR=/tmp/evo-cache0
cd /tmp
{ date -u; timeout -s INT "${CHECK_S:-250}" python3 "$REPO/benchmarks/session10/checks.py"; date -u; } > "$OUT/checks.log" 2>&1
{
  date -u
  timeout -s INT "${COVERAGE_S:-290}" python3 "$REPO/benchmarks/seeds/coverage_check.py" /tmp/coverage hopper 2>&1 | tail -14
  gzip -c /tmp/coverage/coverage.csv > "$OUT/coverage_hopper.csv.gz"
  date -u
} > "$OUT/coverage_hopper.log" 2>&1
cd "$REPO" && device_done
