#!/usr/bin/env bash
# Thirteenth session, one H200 (~5 minutes): does the hopper genome hold kernels the shortlist does not
# pick, on shapes where the shortlist is far behind the libraries? The same 5 shapes swept twice in one
# command, libraries in the same runs: the shortlist (24 picks), then 150 random hopper configurations
# a shape. Fast timing settings as in the compare runs. One tarball comes back.
#   OUT=/some/folder bash benchmarks/session13/run_d.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/r13d && mkdir -p $R
SH='[333x6144x4096,77x4096x4096,1024x256x16384,256x256x16384,64x64x256]'
(
  export EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1
  mkdir -p /tmp/wd && cd /tmp/wd
  common=(shapes=inline "shapes.list=$SH" evaluator.replays=3 evaluator.target_replay_ms=10 evaluator.draws=2 search.progress=false)
  timeout -s INT 100 python3 -m evo sweep "${common[@]}" sweep.sample=shortlist sweep.budget=24 archive.path=/tmp/wd/short.sqlite 2>&1 | tail -12
  timeout -s INT 230 python3 -m evo sweep "${common[@]}" family=hopper sweep.sample=random sweep.budget=150 archive.path=/tmp/wd/rand.sqlite 2>&1 | tail -12
  for a in short rand; do python3 -m evo archive elites --params /tmp/wd/$a.sqlite > $R/${a}_per_shape.txt 2>&1; cp /tmp/wd/$a.sqlite $R/; done
  python3 -c "import sqlite3; db = sqlite3.connect('/tmp/wd/rand.sqlite'); print('rand', db.execute('select status, count(*) from evaluations group by status').fetchall())"
) > $R/sweeps.log 2>&1
cat $R/sweeps.log $R/short_per_shape.txt $R/rand_per_shape.txt
device_done
cp "$OUT/gpu.txt" $R/ && tar -czf "$OUT/run_d.tgz" -C /tmp r13d
