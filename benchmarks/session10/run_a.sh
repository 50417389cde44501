#!/usr/bin/env bash
# Tenth session, first GPU command (nvidia-h200-x2, about 6 minutes):
#  GPU 0: benchmarks/session10/checks.py: STREAM_K=2 (the last round alone) where stream-K of the wider
#         region lost, then FIXUP=1 against fp32 atomics in pairs on llm_layers' first split-K and
#         tail-split picks (log: checks.log);
#  GPU 1: the hopper coverage check, whose EXTRA now holds two STREAM_K=2 and two FIXUP=1 configurations.
#   OUT=/some/folder bash benchmarks/session10/run_a.sh
CHECK=benchmarks/session10/checks.py CHECK_S=330 COVERAGE_S=330 exec bash benchmarks/session8/next_run_a.sh
