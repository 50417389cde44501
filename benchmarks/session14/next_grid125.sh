#!/usr/bin/env bash
# For the next GPU session (NEXT.md item 1), one H200, ~9.5 minutes: grid125 at 24 shortlist picks with
# the fourteenth session's stage rule, libraries in the same run, cut at 540 s (as session10's run_c).
# Its table, failures and archive come back in $OUT (grid125_*).
#   OUT=/some/folder bash benchmarks/session14/next_grid125.sh
. benchmarks/device_common.sh
device_setup
shortlist_sweep 0 grid125 24 540
tail -12 "$OUT/grid125_sweep.log"
device_done
