#!/usr/bin/env bash
# Twelfth session, one H200, one command (~9 minutes), after run_a showed the launch arguments (tensor
# maps) at 23 us a set and the projection check's host cost: (1) the GPU tests that hold the changed
# paths (the bad-kernel selftest through the graphed projection check, racing, the projection tests),
# (2) the quick preset, race on, a cold fill cut at 60 s then a warm run cut at 60 s with EVO_PROFILE,
# (3) `evo compare` at 24 per shape, one seed, shortlist and search (racing and FIXUP in, fast timing
# settings as in the earlier compare runs), cut at 300 s, then its table. One tarball comes back.
#   OUT=/some/folder bash benchmarks/session12/run_b.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/r12b && mkdir -p $R
(cd /tmp && cp -r "$REPO/tests" /tmp/gt && timeout 150 python3 -m pytest -q -p no:cacheprovider gt/test_gpu.py gt/test_projection.py \
   -k "bad_kernel or raced or gpu_through_timing_sets or gpu_flags or hopper_variants" 2>&1 | tail -8) > $R/pytest_gpu.txt
export EVO_CACHE_DIR=/tmp/evo-cache
mkdir -p /tmp/w && cd /tmp/w
args=(+experiment=quick llm=none 'evaluator.gpus=[0]' search.progress=false)
t0=$(date +%s.%N)
timeout 60 evo run "${args[@]}" archive.path=/tmp/w/quick_fill.sqlite > $R/quick_fill.log 2>&1
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
cd "$REPO"
OUT=$R BUDGET=24 SEEDS=1 ARMS='[shortlist,search]' LIMIT_S=300 \
  EXTRA="evaluator.replays=3 evaluator.target_replay_ms=10 evaluator.draws=2" bash benchmarks/search/compare_gpu.sh > $R/compare_driver.log 2>&1
device_done
cp "$OUT/gpu.txt" $R/ && tar -czf "$OUT/run_b.tgz" -C /tmp r12b && cat $R/pytest_gpu.txt $R/quick_throughput.txt $R/raced.txt && tail -30 $R/compare24.log
