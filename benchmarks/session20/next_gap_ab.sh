#!/usr/bin/env bash
# For the next GPU session (session20/NEXT.md item 3), one H200, ~5 minutes: gap_ab.py on grid125 (31-41 shapes
# where a variant applies, 1126 evaluations at --picks 6): transposed 32- and 48-row tiles at M <= 64, and
# the deepest pipeline for small-stage picks of 16-63 k-steps an item, beside the shapes' 24 shortlist picks.
# Into $OUT/gap.tgz.
#   OUT=/some/folder bash benchmarks/session20/next_gap_ab.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/gap && mkdir -p $R
EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT 330 python3 benchmarks/session20/gap_ab.py --sets grid125 --picks 6 \
  --out $R --budget-s 300 > $R/gap.log 2>&1
tail -12 $R/gap.log
device_done
cp "$OUT/gpu.txt" $R/ && xz -9 $R/*.sqlite; tar -czf "$OUT/gap.tgz" -C /tmp gap
