#!/usr/bin/env bash
# For the next GPU session (NEXT.md item 1), one H200, ~5.5 minutes (timeouts add up to 300 s): every GPU test,
# now with kernels timed as programmatic dependent launches by default (the bad-kernel self-test among them)
# and hopper's wait after its prologue; then, if they passed, hopper's prologue before the wait against the
# wait first (benchmarks/session18/prologue_ab.py: the 16 small shapes of session 18's PDL A/B, 2 picks
# each). The tests' tail into $OUT/pytest_gpu.txt, the pairs into $OUT/prologue.tgz.
#   OUT=/some/folder bash benchmarks/session18/next_tests.sh
. benchmarks/device_common.sh
device_setup
gpu_tests "$OUT/pytest_gpu.txt" 200 gt/test_gpu.py gt/test_projection.py gt/test_input_integrity.py gt/test_launch_args.py
cat "$OUT/pytest_gpu.txt"
if ! grep -q " passed" "$OUT/pytest_gpu.txt" || grep -q -E "failed|error" "$OUT/pytest_gpu.txt"; then
  echo "the GPU tests did not all pass: no pairs"; device_done; exit 1
fi
R=/tmp/prologue && mkdir -p $R
SMALL="64x64x256 64x1024x1024 64x4096x1024 256x256x1024 256x256x16384 256x16384x64 256x16384x256 1024x256x4096
  1024x4096x256 4096x64x1024 4096x256x256 4096x1024x64 4096x1024x256 16384x64x64 16384x64x256 16384x256x256"
EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT 100 python3 benchmarks/session18/prologue_ab.py --shapes $SMALL --picks 2 \
  --out $R --budget-s 80 > $R/prologue.log 2>&1
tail -20 $R/prologue.log
device_done
xz -9 $R/*.sqlite; tar -czf "$OUT/prologue.tgz" -C /tmp prologue
