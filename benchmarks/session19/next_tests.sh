#!/usr/bin/env bash
# For the next GPU session (NEXT.md item 0), one H200, ~4 minutes: every GPU test, now with
# tests/test_dispatch_gpu.py (torch.ops.evo.matmul eager, in graphs, under torch.compile; its export folder
# takes each kernel's PDL verdict from the compile, as evo export has since session 19), which session 19's
# script left out. The tests' tail into $OUT/pytest_gpu.txt.
#   OUT=/some/folder bash benchmarks/session19/next_tests.sh
. benchmarks/device_common.sh
device_setup
gpu_tests "$OUT/pytest_gpu.txt" 280 gt/test_gpu.py gt/test_projection.py gt/test_input_integrity.py \
  gt/test_launch_args.py gt/test_dispatch_gpu.py
cat "$OUT/pytest_gpu.txt"
device_done
