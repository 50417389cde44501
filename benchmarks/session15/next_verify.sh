#!/usr/bin/env bash
# For the next GPU session (NEXT.md item 1), one H200, ~5 minutes: the check on a GPU of the library
# timing change (libraries run the same checks between sealed chunks as kernels, verdicts unread):
# (1) the GPU tests; (2) duty_cycle.py: torch.matmul timed the library way and the kernel way should now
# read alike (same clock, times within about 1%); (3) 8 large shapes at 8 shortlist picks with 100 ms
# replays, libraries in the same run: the baselines' clocks against the kernels', and the ratios then.
#   OUT=/some/folder bash benchmarks/session15/next_verify.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/r16v && mkdir -p $R
gpu_tests $R/pytest_gpu.txt 200 gt/test_gpu.py gt/test_projection.py gt/test_input_integrity.py gt/test_launch_args.py
tail -3 $R/pytest_gpu.txt
timeout 100 python3 benchmarks/session15/duty_cycle.py > $R/duty_cycle.txt 2>&1
cat $R/duty_cycle.txt
(mkdir -p /tmp/w8 && cd /tmp/w8 && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout -s INT 240 python3 -m evo sweep shapes=inline \
  'shapes.list=[8192x8192x8192,4096x4096x4096,16384x16384x16384,16384x4096x16384,4096x16384x16384,16384x16384x4096,8192x8192x28672,8192x4096x14336]' \
  sweep.sample=shortlist sweep.budget=8 evaluator.replays=3 evaluator.target_replay_ms=100 evaluator.draws=2 \
  search.progress=false archive.path=/tmp/w8/big.sqlite 2>&1 | tail -16
 python3 -m evo archive elites --params /tmp/w8/big.sqlite
 python3 "$REPO/benchmarks/session15/clocks.py" /tmp/w8/big.sqlite
) > $R/big.txt 2>&1
tail -40 $R/big.txt
device_done
cp "$OUT/gpu.txt" $R/ && cp /tmp/w8/big.sqlite $R/ && xz -9 $R/big.sqlite; tar -czf "$OUT/verify.tgz" -C /tmp r16v
