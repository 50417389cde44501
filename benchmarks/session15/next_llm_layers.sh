#!/usr/bin/env bash
# For the next GPU session (NEXT.md item 2), one H200, ~7 minutes: llm_layers whole at 24 shortlist picks
# (the deep-variant rule shipped), libraries timed like kernels: issue 13's figure for the set without the
# library-clock bias. Its table, failures and archive come back in $OUT (llm_layers_*).
#   OUT=/some/folder bash benchmarks/session15/next_llm_layers.sh
. benchmarks/device_common.sh
device_setup
shortlist_sweep 0 llm_layers 24 450
tail -14 "$OUT/llm_layers_sweep.log"
device_done
