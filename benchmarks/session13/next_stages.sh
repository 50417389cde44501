#!/usr/bin/env bash
# For the next GPU session (NEXT.md item 1), one H200, ~9 minutes: the thirteenth session's finds as
# pairs with the shortlist's own picks (stages_ab.py): split picks with deeper pipelines, and plain
# picks as transposed products where M <= 256, on llm_layers and grid125, 3 pairs a shape and kind
# (1030 evaluations; the queue is cut at 480 s). One tarball comes back.
#   OUT=/some/folder bash benchmarks/session13/next_stages.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/stages && mkdir -p $R
EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT 540 python3 benchmarks/session13/stages_ab.py --sets llm_layers grid125 \
  --picks 3 --out $R --budget-s 480 > $R/stages_ab.log 2>&1
tail -8 $R/stages_ab.log
python3 benchmarks/session13/stages_pairs.py $R/stages.sqlite > $R/stages_pairs.txt 2>&1
device_done
cp "$OUT/gpu.txt" $R/ && xz -9 $R/stages.sqlite; tar -czf "$OUT/stages.tgz" -C /tmp stages
