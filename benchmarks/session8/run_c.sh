#!/usr/bin/env bash
# Eighth session, third command, on the two-H200 machine (~9.5 minutes): the shortlist at the issue's
# cap of 24 configurations per shape (run_b's comparison on the 6 worst shapes found picks 17-24
# winning there: 255x2816x2048 0.78 -> 0.92 of the best library).
#  GPU 0: llm_layers at 24 picks (2088 evaluations, ~7.5 minutes at run_a's rate);
#  GPU 1: grid125 at 24 picks, cut at 560 s (3000 evaluations would take ~17 minutes on one GPU: the
#         sweep goes rank by rank over every shape, so the cut leaves every shape its first ~15 picks).
#   OUT=/some/folder bash benchmarks/session8/run_c.sh
. benchmarks/device_common.sh
device_setup
shortlist_sweep 0 llm_layers 24 560 &
A=$!
shortlist_sweep 1 grid125 24 560 &
B=$!
wait $A $B
device_done
