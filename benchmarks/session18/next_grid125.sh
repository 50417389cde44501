#!/usr/bin/env bash
# For the next GPU session (NEXT.md item 2), one H200, ~9.5 minutes: grid125 at 24 shortlist picks with
# evaluator.pdl on (the default since session 18), libraries in the same run, cut at 540 s as session 16's
# run (13-20 picks a shape there). Its table, failures and archive come back in $OUT (grid125_*).
#   OUT=/some/folder bash benchmarks/session18/next_grid125.sh
. benchmarks/device_common.sh
device_setup
shortlist_sweep 0 grid125 24 540
tail -12 "$OUT/grid125_sweep.log"
device_done
