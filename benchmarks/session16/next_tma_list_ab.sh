#!/usr/bin/env bash
# For the next GPU session (NEXT.md item 2), one H200, ~7 minutes: the TMA store rule measured as a list
# (session14/shortlist_ab.py --rule tma_store): on the 30 grid125 shapes where it changes the shortlist,
# main's 24 picks against the same list without the TMA store, side by side in one run, libraries in the
# same run, cut at 420 s. One tarball comes back.
#   OUT=/some/folder bash benchmarks/session16/next_tma_list_ab.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/tab && mkdir -p $R
EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT 480 python3 benchmarks/session14/shortlist_ab.py --rule tma_store \
  --set grid125 --differing --out $R --budget-s 420 > $R/tma_list_ab.log 2>&1
tail -30 $R/tma_list_ab.log
device_done
cp "$OUT/gpu.txt" $R/ && xz -9 $R/*.sqlite; tar -czf "$OUT/tma_list_ab.tgz" -C /tmp tab
