#!/usr/bin/env bash
# Issue 14's floor A/B (session29/NEXT.md item 2), one GPU, one 10-minute command at a time:
# `evo compare` arms shortlist, search and floor (search.min_evaluations_per_shape = a third of the budget)
# at 24 evaluations a shape on the 14 compare shapes, seeds 0..SEEDS-1, through search/compare_gpu.sh.
# On an H100, session 29's finished H100 arms (shortlist, search seed 0) are taken as they are (their
# re-timing is dropped: the re-timed row comes from this machine, every arm's bests side by side).
# A later command continues from the arms kept in benchmarks/search/compare24_h200/ (copy $OUT/compare24/
# there between commands). Into $OUT/compare24.tgz (archives, logs, compare.json).
#   OUT=/some/folder bash benchmarks/session30/compare_floor.sh
set -u
OUT=${OUT:?}
. benchmarks/device_common.sh
device_setup > /dev/null
KEPT=benchmarks/search/compare24_h200
if [ ! -d "$KEPT" ] && nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H100; then
  mkdir -p "$KEPT" /tmp/s29 && tar -xJf benchmarks/session29/compare24/archives.tar.xz -C /tmp/s29
  cp /tmp/s29/compare24/shortlist.sqlite /tmp/s29/compare24/search.seed0.sqlite "$KEPT"/
  echo "on an H100: continuing from session 29's H100 shortlist and search seed 0"
fi
ARMS=${ARMS:-'[shortlist,search,floor]'} SEEDS=${SEEDS:-3} LIMIT_S=${LIMIT_S:-500} bash benchmarks/search/compare_gpu.sh
device_done > /dev/null
tar -czf "$OUT/compare24.tgz" -C "$OUT" compare24 compare24.log compare24.run.log gpu.txt 2>/dev/null
rm -rf "$OUT/compare24"
