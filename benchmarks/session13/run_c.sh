#!/usr/bin/env bash
# Thirteenth session, one H200 (~7 minutes), at the commit that ships session12's patches, the subnormal
# tolerance and the duplicate re-plan: (1) every GPU test; (2) the quick preset's throughput again (run_a
# measured 4.37 evaluations/s warm in one run): a cold fill cut at 60 s, then two warm runs cut at 60 s
# (the first profiled), each into its own archive. One tarball comes back.
#   OUT=/some/folder bash benchmarks/session13/run_c.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/r13c && mkdir -p $R
(cd /tmp && rm -rf gt && cp -r "$REPO/tests" /tmp/gt && timeout 220 python3 -m pytest -q -p no:cacheprovider gt/test_gpu.py \
   gt/test_projection.py gt/test_input_integrity.py gt/test_launch_args.py -k "gpu or integrity or launch" 2>&1 | tail -8) > $R/pytest_gpu.txt
tail -3 $R/pytest_gpu.txt
quick_profiled $R 60 60
(
  export EVO_CACHE_DIR=/tmp/evo-cache
  cd /tmp/w && t0=$(date +%s.%N)
  timeout 60 evo run +experiment=quick llm=none 'evaluator.gpus=[0]' search.progress=false archive.path=/tmp/w/quick_on2.sqlite \
    > $R/quick_on2.log 2>&1
  t1=$(date +%s.%N)
  python3 "$REPO/benchmarks/cluster/throughput.py" "quick_on2=/tmp/w/quick_on2.sqlite:$(python3 -c "print($t1 - $t0)")" \
    >> $R/quick_throughput.txt 2>&1
  python3 -c "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); print('on2', db.execute('select status, count(*) from evaluations group by status').fetchall())" \
    /tmp/w/quick_on2.sqlite >> $R/statuses.txt 2>&1
  cp /tmp/w/quick_*.sqlite $R/
)
cat $R/quick_throughput.txt $R/statuses.txt
device_done
cp "$OUT/gpu.txt" $R/ && tar -czf "$OUT/run_c.tgz" -C /tmp r13c
