#!/usr/bin/env bash
# Session 26, one GPU command (~9 minutes): the coverage check of every family (session25/NEXT.md item 3),
# the first since session 23's NaN guard byte changed every hopper kernel: the 1000-shape grid, llm_layers
# and the unaligned shapes, each family's shortlist picks, its default and the EXTRA configurations
# (about 40,000 checks, 362 configurations). Cut at COVERAGE_S (default 520 s); into $OUT/coverage.tgz.
#   OUT=/some/folder bash benchmarks/session26/coverage_run.sh
set -uo pipefail
. benchmarks/device_common.sh; device_setup
R=/tmp/coverage && rm -rf $R && mkdir -p $R
(cd /tmp && EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT "${COVERAGE_S:-520}" \
   python3 "$REPO/benchmarks/seeds/coverage_check.py" $R hopper ampere skinny simt) > $R/coverage.txt 2>&1
tail -40 $R/coverage.txt
device_done; cp "$OUT/gpu.txt" $R/
gzip -f $R/coverage.csv 2>/dev/null
tar -czf "$OUT/coverage.tgz" -C /tmp coverage
