#!/usr/bin/env bash
# For the next GPU session (NEXT.md item 3), one H200, ~7.5 minutes: the TMA store epilogue (TMA_STORE, built
# after this session's GPU time, CPU-tested only). (1) the GPU tests of hopper's variants, four of them
# TMA_STORE kernels on odd shapes (M = 1, 77, 129, 333; N = 136); (2) and (3) shortlist picks against the
# same picks with TMA_STORE (two staging tiles, else one, else one with fewer stages), side by side,
# libraries in the same run, every evaluation checked (session14/deep_ab.py --variant tma_store): (2) on
# grid125's 7 worst K = 256 shapes, every pick that takes it; (3) the first 2 picks a shape of llm_layers
# and grid125 that take it. If (1) fails, take the gene's values 1 and 2 out of hopper's space
# (evo/families/hopper.py) until it is mended, as NEXT.md says: searches can reach it.
#   OUT=/some/folder bash benchmarks/session15/next_tma_store.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/tma && mkdir -p $R
gpu_tests $R/pytest_gpu.txt 150 gt/test_gpu.py -k hopper_variants
tail -3 $R/pytest_gpu.txt
# (2) grid125's 7 worst K = 256 shapes (4 k-steps a tile: the epilogue weighs most), every pick that takes
# TMA_STORE, up to 12 a shape (83 pairs): their winners, 128x128 tiles at 2 CTAs per SM, come 5th.
EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT 130 python3 benchmarks/session14/deep_ab.py --variant tma_store \
  --shapes 4096x1024x256 16384x256x256 16384x4096x256 16384x16384x256 4096x16384x256 4096x256x256 256x16384x256 \
  --picks 12 --out $R/k256 --budget-s 100 > $R/tma_k256.log 2>&1
tail -10 $R/tma_k256.log
EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT 250 python3 benchmarks/session14/deep_ab.py --variant tma_store \
  --sets llm_layers grid125 --picks 2 --out $R --budget-s 220 > $R/tma_ab.log 2>&1
tail -14 $R/tma_ab.log
for db in $R/k256/deep.sqlite $R/deep.sqlite; do
  python3 -c "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); print(db.execute('select status, count(*) from evaluations group by status').fetchall())" $db
done
device_done
cp "$OUT/gpu.txt" $R/ && xz -9 $R/deep.sqlite $R/k256/deep.sqlite; tar -czf "$OUT/tma.tgz" -C /tmp tma
