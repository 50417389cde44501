#!/usr/bin/env bash
# For the next GPU session (NEXT.md item 2), one H200, ~8.5 minutes a set: main's shortlist sweep against
# the same sweep with deep-pipeline variants beside small-stage, long-K hopper picks (shortlist_ab.py),
# on one shape set (SET, default llm_layers; grid125 in a second command), side by side in one run, cut
# at 470 s. One tarball comes back.
#   OUT=/some/folder SET=llm_layers bash benchmarks/session14/next_shortlist_ab.sh
. benchmarks/device_common.sh
device_setup
SET=${SET:-llm_layers}
R=/tmp/sab_$SET && mkdir -p $R
EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT 530 python3 benchmarks/session14/shortlist_ab.py --set "$SET" --out $R \
  --budget-s 470 > $R/shortlist_ab.log 2>&1
tail -30 $R/shortlist_ab.log
device_done
cp "$OUT/gpu.txt" $R/ && xz -9 $R/$SET.sqlite; tar -czf "$OUT/sab_$SET.tgz" -C /tmp sab_$SET
