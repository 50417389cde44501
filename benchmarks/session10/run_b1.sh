#!/usr/bin/env bash
# Tenth session, second GPU command, one H200 (~9.5 minutes): llm_layers at 24 shortlist picks with the
# ordered fix-up on the shortlist (split-K and tail splits of at most 4 parts), cut at 540 s, libraries
# in the same run; the eighth and ninth sessions measured 0.971 with the same command.
#   OUT=/some/folder bash benchmarks/session10/run_b1.sh
. benchmarks/device_common.sh
device_setup
shortlist_sweep 0 llm_layers 24 "${SWEEP_S:-540}"
device_done
