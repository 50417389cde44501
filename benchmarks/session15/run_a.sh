#!/usr/bin/env bash
# Fifteenth session, one H200 (~8 minutes), with session14's cluster_splitk.patch applied (multicast pairs,
# CLUSTER_M=2, with split-K over L2; never run on a GPU before): (1) the GPU tests of hopper's variants,
# five of them new pairs with split-K; (2) the split-K picks of llm_layers and grid125 that are also
# valid as pairs, against those pairs, side by side (session14/deep_ab.py --variant pair); (3) 8192^3 and
# 4096^3 at 8 shortlist picks with replays of 100 ms (sustained clocks), libraries in the same run.
#   OUT=/some/folder bash benchmarks/session15/run_a.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/r15a && mkdir -p $R
(cd /tmp && rm -rf gt && cp -r "$REPO/tests" /tmp/gt && timeout 150 python3 -m pytest -q -p no:cacheprovider gt/test_gpu.py \
   -k "hopper_variants" 2>&1 | tail -8) > $R/pytest_gpu.txt
tail -3 $R/pytest_gpu.txt
EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT 300 python3 benchmarks/session14/deep_ab.py --variant pair \
  --sets llm_layers grid125 --picks 3 --out $R --budget-s 260 > $R/pair_ab.log 2>&1
tail -14 $R/pair_ab.log
python3 -c "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); print(db.execute('select status, count(*) from evaluations group by status').fetchall())" $R/deep.sqlite
(mkdir -p /tmp/w8 && cd /tmp/w8 && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout -s INT 100 python3 -m evo sweep shapes=inline \
  'shapes.list=[8192x8192x8192,4096x4096x4096]' sweep.sample=shortlist sweep.budget=8 evaluator.replays=3 \
  evaluator.target_replay_ms=100 evaluator.draws=2 search.progress=false archive.path=/tmp/w8/big.sqlite 2>&1 | tail -12
 python3 -m evo archive elites --params /tmp/w8/big.sqlite) > $R/big.txt 2>&1
tail -8 $R/big.txt
device_done
cp "$OUT/gpu.txt" $R/ && xz -9 $R/deep.sqlite; cp /tmp/w8/big.sqlite $R/ && xz -9 $R/big.sqlite; tar -czf "$OUT/run_a.tgz" -C /tmp r15a
