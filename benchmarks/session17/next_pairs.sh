#!/usr/bin/env bash
# For the next GPU session (NEXT.md items 2-4), one H200, ~6.5 minutes (timeouts add up to 380 s): pairs timed
# side by side by benchmarks/session14/deep_ab.py, libraries in the same run: (1) the 2-CTAs-per-SM picks of
# the K = 256 shapes against one persistent CTA per SM with two TMA staging tiles (--variant one_cta_tma);
# (2) the split-K picks of the long-K, small-output shapes against a tile twice as large at twice the splits
# (--variant wider_split); (3) one stage fewer to fit two staging tiles, on more K = 256 shapes
# (--variant tma_store_fewer); (4) the tiny outputs as 4-CTA cluster splits (--variant cluster_split4). On the
# CPU (`--backend simulated`) the same commands make 29, 25, 39 and 40 pairs.
#   OUT=/some/folder bash benchmarks/session17/next_pairs.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/pairs && mkdir -p $R
K256="4096x1024x256 16384x256x256 1024x4096x256 16384x4096x256 4096x256x256 256x16384x256 1024x16384x256 16384x1024x256"
EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT 100 python3 benchmarks/session14/deep_ab.py --variant one_cta_tma \
  --shapes $K256 --picks 12 --out $R/one_cta_tma --budget-s 80 > $R/one_cta_tma.log 2>&1
tail -8 $R/one_cta_tma.log
EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT 100 python3 benchmarks/session14/deep_ab.py --variant wider_split \
  --shapes 1024x256x16384 256x1024x16384 1024x1024x16384 256x256x16384 512x512x16384 1024x256x4096 --picks 12 \
  --out $R/wider_split --budget-s 80 > $R/wider_split.log 2>&1
tail -8 $R/wider_split.log
EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT 100 python3 benchmarks/session14/deep_ab.py --variant tma_store_fewer \
  --shapes $K256 64x4096x256 4096x64x256 --picks 12 --out $R/fewer --budget-s 80 > $R/fewer.log 2>&1
tail -8 $R/fewer.log
# (4) the tiny outputs: picks that split nothing against a 4-CTA cluster adding K quarters over DSMEM
EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT 80 python3 benchmarks/session14/deep_ab.py --variant cluster_split4 \
  --shapes 64x64x256 64x64x1024 64x128x256 128x64x256 64x256x256 128x128x256 256x64x512 --picks 6 \
  --out $R/cluster_split4 --budget-s 60 > $R/cluster_split4.log 2>&1
tail -8 $R/cluster_split4.log
device_done
cp "$OUT/gpu.txt" $R/ && xz -9 $R/*/*.sqlite; tar -czf "$OUT/pairs.tgz" -C /tmp pairs
