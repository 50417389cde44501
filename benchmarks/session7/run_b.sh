#!/usr/bin/env bash
# Seventh session, second command, on the two-H200 machine (about 10 minutes), after the shortlist's
# transposed picks moved to every fourth place:
#  GPU 0: llm_layers shortlist sweep at 16 picks (3 replays of 10 ms, 2 draws), libraries in the same run;
#  GPU 1: grid125 at 12 picks, same settings (cut at 555 s: rank-major, so a cut loses the last ranks).
# (Restated over benchmarks/device_common.sh after the run: the same commands.)
#   OUT=/some/folder bash benchmarks/session7/run_b.sh
. benchmarks/device_common.sh
device_setup
shortlist_sweep 0 llm_layers 16 560 &
A=$!
shortlist_sweep 1 grid125 12 555 &
B=$!
wait $A $B
device_done
