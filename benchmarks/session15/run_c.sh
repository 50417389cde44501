#!/usr/bin/env bash
# Fifteenth session, one H200 (~7 minutes), after two changes: a library timing on a throttled GPU is
# timed again after a pause (evo/evaluation/cooldown.py; run_a and run_b had baselines timed at
# 1365-1650 MHz on large shapes), and the deep-pipeline variants beside their picks in the shortlist.
# (1) the GPU tests; (2) large shapes at 8 shortlist picks with replays of 100 ms (sustained clocks),
# libraries in the same run: are their baselines still throttled, and what are the ratios then.
#   OUT=/some/folder bash benchmarks/session15/run_c.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/r15c && mkdir -p $R
(cd /tmp && rm -rf gt && cp -r "$REPO/tests" /tmp/gt && timeout 240 python3 -m pytest -q -p no:cacheprovider gt/test_gpu.py \
   gt/test_projection.py gt/test_input_integrity.py gt/test_launch_args.py 2>&1 | tail -8) > $R/pytest_gpu.txt
tail -3 $R/pytest_gpu.txt
(mkdir -p /tmp/w8 && cd /tmp/w8 && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout -s INT 280 python3 -m evo sweep shapes=inline \
  'shapes.list=[8192x8192x8192,4096x4096x4096,16384x16384x16384,16384x4096x16384,4096x16384x16384,16384x16384x4096,8192x8192x28672,8192x4096x14336]' \
  sweep.sample=shortlist sweep.budget=8 evaluator.replays=3 evaluator.target_replay_ms=100 evaluator.draws=2 \
  search.progress=false archive.path=/tmp/w8/big.sqlite 2>&1 | tail -16
 python3 -m evo archive elites --params /tmp/w8/big.sqlite
 sqlite3 /tmp/w8/big.sqlite "select M, N, K, library, round(time_ms * 1000, 1), clock_mhz, throttled, detail from baselines" 2>&1 ||
 python3 -c "import sqlite3; [print(r) for r in sqlite3.connect('/tmp/w8/big.sqlite').execute('select M, N, K, library, round(time_ms * 1000, 1), clock_mhz, throttled, detail from baselines')]"
) > $R/big.txt 2>&1
tail -40 $R/big.txt
device_done
cp "$OUT/gpu.txt" $R/ && cp /tmp/w8/big.sqlite $R/ && xz -9 $R/big.sqlite; tar -czf "$OUT/run_c.tgz" -C /tmp r15c
