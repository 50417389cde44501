#!/usr/bin/env bash
# Twelfth session, one H200 (~6 minutes): the GPU tests on the launch path as changed (tensor maps
# encoded once per kernel and their address replaced per buffer set, the launch configuration kept per
# stream, buffer-set addresses by arithmetic, the arguments built in a profiled step of their own before
# the graph capture), then the quick preset with racing on: a cold-cache fill run cut at 90 s, then a
# warm run cut at 60 s with EVO_PROFILE, to set against session11's run_a1 (race on: 144 evaluations in
# 60 s, 294 ms per evaluation, capture + instantiate 119 ms of it). Everything comes back in one tarball.
#   OUT=/some/folder bash benchmarks/session12/run_a.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/r12a && mkdir -p $R
(cd /tmp && cp -r "$REPO/tests" /tmp/gt && timeout 200 python3 -m pytest -q -p no:cacheprovider gt/test_gpu.py 2>&1 | tail -15) > $R/pytest_gpu.txt
export EVO_CACHE_DIR=/tmp/evo-cache
mkdir -p /tmp/w && cd /tmp/w
args=(+experiment=quick llm=none 'evaluator.gpus=[0]' search.progress=false)
t0=$(date +%s.%N)
timeout 90 evo run "${args[@]}" archive.path=/tmp/w/quick_fill.sqlite > $R/quick_fill.log 2>&1
t1=$(date +%s.%N)
EVO_PROFILE=$R/profile_on.jsonl timeout 60 evo run "${args[@]}" archive.path=/tmp/w/quick_on.sqlite > $R/quick_on.log 2>&1
t2=$(date +%s.%N)
python3 "$REPO/benchmarks/search/throughput_profile.py" $R/profile_on.jsonl > $R/profile_on.txt 2>&1
python3 "$REPO/benchmarks/cluster/throughput.py" "quick_fill=/tmp/w/quick_fill.sqlite:$(python3 -c "print($t1 - $t0)")" \
  "quick_on=/tmp/w/quick_on.sqlite:$(python3 -c "print($t2 - $t1)")" > $R/quick_throughput.txt 2>&1
for n in fill on; do
  python3 -c "import sqlite3, json, sys; rows = sqlite3.connect(sys.argv[1]).execute(\"select samples_json from evaluations where status = 'ok'\").fetchall(); print(sys.argv[2], 'correct', len(rows), 'raced (one replay)', sum(len(json.loads(r[0])[0]['samples_ms']) < 5 for r in rows))" \
    /tmp/w/quick_$n.sqlite $n >> $R/raced.txt 2>&1
done
cd "$REPO" && device_done
cp "$OUT/gpu.txt" $R/ && tar -czf "$OUT/run_a.tgz" -C /tmp r12a && cat $R/pytest_gpu.txt $R/quick_throughput.txt $R/raced.txt
