#!/usr/bin/env bash
# For the next GPU session (NEXT.md item 1b), one H200, ~3.5 minutes: hopper's consumers releasing each stage
# once per warpgroup and destination CTA (CUTLASS's pattern) against today's once per warp, as pairs on 15
# shapes (K = 256, small, long K, large, two llm_layers), 2 shortlist picks each and their multicast twins
# (release_ab.py --pairs), correctness checked, libraries in the same run. Into $OUT/release.tgz.
#   OUT=/some/folder bash benchmarks/session19/next_release_ab.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/release && mkdir -p $R
SHAPES="4096x1024x256 16384x256x256 1024x4096x256 16384x4096x256 64x64x256 64x1024x1024 256x256x1024 4096x64x1024
  1024x256x16384 256x1024x16384 256x256x16384 4096x4096x4096 8192x8192x8192 96x4096x2304 333x6144x4096"
EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT 190 python3 benchmarks/session19/release_ab.py --shapes $SHAPES --picks 2 \
  --pairs --out $R --budget-s 170 > $R/release.log 2>&1
tail -12 $R/release.log
device_done
cp "$OUT/gpu.txt" $R/ && xz -9 $R/*.sqlite; tar -czf "$OUT/release.tgz" -C /tmp release
