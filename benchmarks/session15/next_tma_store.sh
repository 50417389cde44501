#!/usr/bin/env bash
# For the next GPU session (NEXT.md item 3), one H200, ~6 minutes: the TMA store epilogue (TMA_STORE=1, built
# after this session's GPU time, CPU-tested only). (1) the GPU tests of hopper's variants, four of them
# TMA_STORE kernels on odd shapes (M = 1, 77, 129, 333; N = 136); (2) the first 2 shortlist picks a shape of
# llm_layers and grid125 that are also valid with TMA_STORE=1, against them, side by side, libraries in
# the same run, every evaluation checked (session14/deep_ab.py --variant tma_store). If (1) fails, take the
# gene's value 1 out of hopper's space (evo/families/hopper.py) until it is mended: searches can reach it.
#   OUT=/some/folder bash benchmarks/session15/next_tma_store.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/tma && mkdir -p $R
(cd /tmp && rm -rf gt && cp -r "$REPO/tests" /tmp/gt && timeout 150 python3 -m pytest -q -p no:cacheprovider gt/test_gpu.py \
   -k "hopper_variants" 2>&1 | tail -8) > $R/pytest_gpu.txt
tail -3 $R/pytest_gpu.txt
EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT 330 python3 benchmarks/session14/deep_ab.py --variant tma_store \
  --sets llm_layers grid125 --picks 2 --out $R --budget-s 290 > $R/tma_ab.log 2>&1
tail -14 $R/tma_ab.log
python3 -c "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); print(db.execute('select status, count(*) from evaluations group by status').fetchall())" $R/deep.sqlite
device_done
cp "$OUT/gpu.txt" $R/ && xz -9 $R/deep.sqlite; tar -czf "$OUT/tma.tgz" -C /tmp tma
