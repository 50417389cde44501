#!/usr/bin/env bash
# For the next GPU session, one H200 (~5 minutes): what racing (evaluator.race_factor, built in the
# eleventh session without a GPU) does to the quick preset's evaluations per second, and where an
# evaluation's time goes (EVO_PROFILE, never measured so far). One compile cache for every run; a
# first run fills it (race off, not counted). Then, cache warm, each cut at 60 s, profiled without
# per-step waits: race off, race on (1.3), race off again (so drift between runs shows), the archives'
# evaluations/s and raced counts side by side.
#   OUT=/some/folder bash benchmarks/session11/run_a1.sh
. benchmarks/device_common.sh
device_setup
export EVO_CACHE_DIR=/tmp/evo-cache
mkdir -p /tmp/w && cd /tmp/w && rm -f /tmp/w/quick_*.sqlite*
args=(+experiment=quick llm=none 'evaluator.gpus=[0]' search.progress=false)
timeout 90 evo run "${args[@]}" evaluator.race_factor=0 archive.path=/tmp/w/quick_fill.sqlite > "$OUT/quick_fill.log" 2>&1
echo "fill exit $?"
labels=()
for run in off1:0 on:1.3 off2:0; do
  name=${run%%:*} factor=${run##*:}
  t0=$(date +%s.%N)
  EVO_PROFILE="$OUT/profile_$name.jsonl" timeout 60 evo run "${args[@]}" evaluator.race_factor="$factor" \
    archive.path="/tmp/w/quick_$name.sqlite" > "$OUT/quick_$name.log" 2>&1
  echo "quick $name (race_factor $factor) exit $?"
  labels+=("quick_$name=/tmp/w/quick_$name.sqlite:$(python3 -c "print($(date +%s.%N) - $t0)")")
  python3 "$REPO/benchmarks/search/throughput_profile.py" "$OUT/profile_$name.jsonl" > "$OUT/profile_$name.txt" 2>&1
  python3 -c "import sqlite3, json, sys; rows = sqlite3.connect(sys.argv[1]).execute(\"select samples_json from evaluations where status = 'ok'\").fetchall(); print(sys.argv[2], 'correct', len(rows), 'raced (one replay)', sum(len(json.loads(r[0])[0]['samples_ms']) < 5 for r in rows))" \
    "/tmp/w/quick_$name.sqlite" "$name" | tee -a "$OUT/raced.txt"
done
python3 "$REPO/benchmarks/cluster/throughput.py" "${labels[@]}" 2>&1 | tee "$OUT/quick_throughput.txt"
# the bias of a first replay (what a raced kernel's one sample is), from the unraced runs: first / median
python3 -c "import sqlite3, json, statistics, sys
r = [json.loads(x[0])[0]['samples_ms'] for p in sys.argv[1:] for x in sqlite3.connect(p).execute(\"select samples_json from evaluations where status = 'ok'\")]
q = sorted(s[0] / statistics.median(s) for s in r if len(s) == 5)
print('first replay / median of five over', len(q), 'evaluations: median', q[len(q) // 2], 'p10', q[len(q) // 10], 'p90', q[9 * len(q) // 10])" \
  /tmp/w/quick_off1.sqlite /tmp/w/quick_off2.sqlite | tee "$OUT/first_replay_bias.txt"
cd "$REPO" && device_done
