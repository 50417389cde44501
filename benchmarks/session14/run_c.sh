#!/usr/bin/env bash
# Fourteenth session, one H200 (~6.5 minutes): pipelines deeper than 7 stages as pairs (deep_ab.py), after
# run_b's ncu profile showed the library running 6-16 stages on the shapes the family cannot reach: the first
# 3 shortlist picks per shape of llm_layers and grid125 whose pipeline can go deeper, against the deepest that
# fits up to 16, cut at 330 s. One tarball comes back.
#   OUT=/some/folder bash benchmarks/session14/run_c.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/r14c && mkdir -p $R
EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT 380 python3 benchmarks/session14/deep_ab.py --sets llm_layers grid125 \
  --picks 3 --out $R --budget-s 330 > $R/deep_ab.log 2>&1
tail -14 $R/deep_ab.log
python3 -c "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); print(db.execute('select status, count(*) from evaluations group by status').fetchall())" $R/deep.sqlite
device_done
cp "$OUT/gpu.txt" $R/ && xz -9 $R/deep.sqlite; tar -czf "$OUT/run_c.tgz" -C /tmp r14c
