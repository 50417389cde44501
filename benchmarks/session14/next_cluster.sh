#!/usr/bin/env bash
# For the next GPU session (NEXT.md item 4), one H200, ~5 minutes: multicast pairs with split-K over L2,
# built after this session's GPU time and not yet run on a GPU. First, on the CPU side:
#   git apply benchmarks/session14/cluster_splitk.patch   (then build the evo wheel from the working tree)
# Then: (1) the GPU tests of hopper's variants, five of them multicast pairs with split-K (atomics and
# ordered partials) on odd shapes; (2) the split-K picks of llm_layers and grid125 that are also valid as
# pairs, against those pairs (deep_ab.py --variant pair, 566 evaluations), every evaluation checked
# for correctness. Ship the patch only if (1) passes, every pair is correct, and pairs gain broadly.
#   OUT=/some/folder bash benchmarks/session14/next_cluster.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/pairs && mkdir -p $R
(cd /tmp && rm -rf gt && cp -r "$REPO/tests" /tmp/gt && timeout 150 python3 -m pytest -q -p no:cacheprovider gt/test_gpu.py \
   -k "hopper_variants" 2>&1 | tail -8) > $R/pytest_gpu.txt
tail -3 $R/pytest_gpu.txt
EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT 330 python3 benchmarks/session14/deep_ab.py --variant pair \
  --sets llm_layers grid125 --picks 3 --out $R --budget-s 290 > $R/pair_ab.log 2>&1
tail -14 $R/pair_ab.log
python3 -c "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); print(db.execute('select status, count(*) from evaluations group by status').fetchall())" $R/deep.sqlite
device_done
cp "$OUT/gpu.txt" $R/ && xz -9 $R/deep.sqlite; tar -czf "$OUT/pairs.tgz" -C /tmp pairs
