#!/usr/bin/env bash
# Fifteenth session, one H200 (~1.5 minutes): duty_cycle.py (torch.matmul timed as a library and as a
# kernel, alternately, replays of 100 ms), to see why baselines ran at lower clocks than kernels.
#   OUT=/some/folder bash benchmarks/session15/run_d.sh
. benchmarks/device_common.sh
device_setup
timeout 150 python3 benchmarks/session15/duty_cycle.py 2>&1 | tee "$OUT/duty_cycle.txt"
device_done
