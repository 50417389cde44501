#!/usr/bin/env bash
# Twelfth session, one H200 (~6 minutes), after the launch parameters became one numpy block per
# evaluation (evo/evaluation/launch_args.py): (1) every GPU test (the launch path changed for all
# kernels), (2) the quick preset, race on: a cold fill cut at 60 s, then a whole quick run (300
# evaluations) on a warm cache with EVO_PROFILE, cut at 120 s. One tarball comes back.
#   OUT=/some/folder bash benchmarks/session12/run_c.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/r12c && mkdir -p $R
(cd /tmp && cp -r "$REPO/tests" /tmp/gt && timeout 200 python3 -m pytest -q -p no:cacheprovider gt/test_gpu.py gt/test_projection.py \
   -k "gpu" 2>&1 | tail -8) > $R/pytest_gpu.txt
export EVO_CACHE_DIR=/tmp/evo-cache
mkdir -p /tmp/w && cd /tmp/w
args=(+experiment=quick llm=none 'evaluator.gpus=[0]' search.progress=false)
t0=$(date +%s.%N)
timeout 60 evo run "${args[@]}" archive.path=/tmp/w/quick_fill.sqlite > $R/quick_fill.log 2>&1
t1=$(date +%s.%N)
EVO_PROFILE=$R/profile_on.jsonl timeout 120 evo run "${args[@]}" archive.path=/tmp/w/quick_on.sqlite > $R/quick_on.log 2>&1
echo "quick run exit $?" >> $R/quick_on.log
t2=$(date +%s.%N)
python3 "$REPO/benchmarks/search/throughput_profile.py" $R/profile_on.jsonl > $R/profile_on.txt 2>&1
python3 "$REPO/benchmarks/cluster/throughput.py" "quick_fill=/tmp/w/quick_fill.sqlite:$(python3 -c "print($t1 - $t0)")" \
  "quick_on=/tmp/w/quick_on.sqlite:$(python3 -c "print($t2 - $t1)")" > $R/quick_throughput.txt 2>&1
for n in fill on; do
  python3 -c "import sqlite3, json, sys; rows = sqlite3.connect(sys.argv[1]).execute(\"select samples_json from evaluations where status = 'ok'\").fetchall(); print(sys.argv[2], 'correct', len(rows), 'raced (one replay)', sum(len(json.loads(r[0])[0]['samples_ms']) < 5 for r in rows))" \
    /tmp/w/quick_$n.sqlite $n >> $R/raced.txt 2>&1
done
cd "$REPO" && device_done
cp "$OUT/gpu.txt" $R/ && tar -czf "$OUT/run_c.tgz" -C /tmp r12c && cat $R/pytest_gpu.txt $R/quick_throughput.txt $R/raced.txt && tail -3 $R/quick_on.log
