#!/usr/bin/env bash
# For the next GPU session (NEXT.md item 2), one H200, ~7 minutes: llm_layers whole at 24 shortlist picks with
# kernels timed as programmatic dependent launches (the default since session 18): issue 13's figure for the
# set as evo.dispatch runs its kernels, against session 16's 0.982 (plain launches). Its table, failures and
# archive come back in $OUT (llm_layers_*).
#   OUT=/some/folder bash benchmarks/session18/next_llm_layers.sh
. benchmarks/device_common.sh
device_setup
shortlist_sweep 0 llm_layers 24 450
tail -14 "$OUT/llm_layers_sweep.log"
device_done
