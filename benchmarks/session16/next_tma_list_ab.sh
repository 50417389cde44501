#!/usr/bin/env bash
# For the next GPU session (NEXT.md item 2), one H200, ~10 minutes: (1) the picks of grid125's worst K = 256
# shapes where two staging tiles do not fit at their stages (the 128x128 winners at 2 CTAs per SM, 3 stages),
# against two tiles at the deepest pipeline that fits (deep_ab.py --variant tma_store_fewer, 27 pairs, about
# a minute), then their first 8 picks that split nothing against the same picks as multicast pairs
# (deep_ab.py --variant multicast, 32 pairs, about a minute); (2) the TMA store rule measured as a list
# (shortlist_ab.py --rule tma_store): on the 30 grid125 shapes where it changes the shortlist, main's 24
# picks against the same list without the TMA store, side by side in one run, libraries in the same run,
# cut at 330 s (timeouts add up to 550 s). One tarball comes back.
#   OUT=/some/folder bash benchmarks/session16/next_tma_list_ab.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/tab && mkdir -p $R
EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT 90 python3 benchmarks/session14/deep_ab.py --variant tma_store_fewer \
  --shapes 4096x1024x256 16384x256x256 1024x4096x256 16384x4096x256 4096x256x256 256x16384x256 \
  --picks 12 --out $R/fewer --budget-s 70 > $R/tma_fewer.log 2>&1
tail -8 $R/tma_fewer.log
# the same shapes' first 8 picks that split nothing, against the same picks as multicast pairs (32 pairs)
EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT 90 python3 benchmarks/session14/deep_ab.py --variant multicast \
  --shapes 4096x1024x256 16384x256x256 1024x4096x256 16384x4096x256 --picks 8 --out $R/multicast --budget-s 70 \
  > $R/multicast.log 2>&1
tail -10 $R/multicast.log
EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT 370 python3 benchmarks/session14/shortlist_ab.py --rule tma_store \
  --set grid125 --differing --out $R --budget-s 330 > $R/tma_list_ab.log 2>&1
tail -30 $R/tma_list_ab.log
device_done
cp "$OUT/gpu.txt" $R/ && xz -9 $R/*.sqlite $R/fewer/*.sqlite $R/multicast/*.sqlite; tar -czf "$OUT/tma_list_ab.tgz" -C /tmp tab
