#!/usr/bin/env bash
# Fifteenth session, one H200 (~8 minutes a part, PART=0 then PART=1): session14/shortlist_ab.py (main's
# 24-pick shortlist against the same with deep-pipeline variants beside small-stage long-K hopper picks,
# the union evaluated side by side, libraries in the same run) on half of grid125's shapes (all of them
# over the two parts: main's half is also the set's figure), then on half of the llm_layers shapes where
# the two lists differ (an A/B only: llm_layers' figure is session14's run_b).
#   OUT=/some/folder PART=0 bash benchmarks/session15/run_b.sh
. benchmarks/device_common.sh
device_setup
PART=${PART:-0}
R=/tmp/r15b$PART && mkdir -p $R
EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT 380 python3 benchmarks/session14/shortlist_ab.py --set grid125 --part $PART/2 \
  --out $R --budget-s 350 > $R/grid125.log 2>&1
tail -12 $R/grid125.log
EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT 150 python3 benchmarks/session14/shortlist_ab.py --set llm_layers --part $PART/2 \
  --differing --out $R --budget-s 120 > $R/llm_layers.log 2>&1
tail -12 $R/llm_layers.log
device_done
cp "$OUT/gpu.txt" $R/ && xz -9 $R/*.sqlite; tar -czf "$OUT/run_b$PART.tgz" -C /tmp r15b$PART
