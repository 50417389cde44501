#!/usr/bin/env bash
# Session 20, one H200, ~2 minutes: stages192_ab.py on grid125 and llm_layers (117 shortlist picks at 5 stages
# beside 6 and 7). Into $OUT/stages192.tgz.
#   OUT=/some/folder bash benchmarks/session20/run_stages192.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/stages192 && mkdir -p $R
EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT 280 python3 benchmarks/session20/stages192_ab.py --sets grid125 llm_layers \
  --out $R --budget-s 260 > $R/stages192.log 2>&1
tail -14 $R/stages192.log
device_done
cp "$OUT/gpu.txt" $R/ && xz -9 $R/*.sqlite; tar -czf "$OUT/stages192.tgz" -C /tmp stages192
