#!/usr/bin/env bash
# Tenth session, third GPU command, one H200 (~10 minutes): grid125 at 24 shortlist picks with the
# ordered fix-up on the shortlist, cut at 540 s as the eighth session's run_c cut it at 560 s (the sweep
# goes rank by rank over every shape, so the cut leaves every shape its first picks), libraries in the
# same run; the eighth session measured 0.951.
#   OUT=/some/folder bash benchmarks/session10/run_c1.sh
. benchmarks/device_common.sh
device_setup
shortlist_sweep 0 grid125 24 "${SWEEP_S:-540}"
device_done
