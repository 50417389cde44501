#!/usr/bin/env bash
# Prepared at the end of the ninth session for the next GPU session (NEXT.md item 0), on the two-H200
# machine, about 5 minutes: the first GPU run of STREAM_K=2 (stream-K of the last round alone).
#  GPU 0: benchmarks/session9/streamk2_check.py (log: streamk2_check.log): plain / STREAM_K=1 /
#         STREAM_K=2 / tail splits on the shapes where stream-K lost with the wider region, libraries in
#         the same run;
#  GPU 1: the hopper coverage check, whose EXTRA now holds two STREAM_K=2 configurations.
#   OUT=/some/folder bash benchmarks/session9/next_run_a.sh
CHECK=benchmarks/session9/streamk2_check.py exec bash benchmarks/session8/next_run_a.sh
