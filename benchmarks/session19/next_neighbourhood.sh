#!/usr/bin/env bash
# For the next GPU session (NEXT.md item 2), one H200, ~4.5 minutes: every hopper configuration of the
# sub-genome around the library's kernels on four long-K, few-output shapes, three of grid125 (neighbourhood.py:
# 64/128 tiles, 1-2 consumers, split-K 2-8 over L2, atomics or ordered partials, 4-10 stages; 170 a shape)
# beside the 24-pick shortlist, libraries in the same run. Into $OUT/neighbourhood.tgz.
#   OUT=/some/folder bash benchmarks/session19/next_neighbourhood.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/neighbourhood && mkdir -p $R
EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT 250 python3 benchmarks/session19/neighbourhood.py \
  --shapes 1024x256x16384 256x1024x16384 512x512x16384 256x256x16384 --out $R --budget-s 230 > $R/neighbourhood.log 2>&1
tail -12 $R/neighbourhood.log
device_done
cp "$OUT/gpu.txt" $R/ && xz -9 $R/*.sqlite; tar -czf "$OUT/neighbourhood.tgz" -C /tmp neighbourhood
