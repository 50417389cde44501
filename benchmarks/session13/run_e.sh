#!/usr/bin/env bash
# Thirteenth session, one H200 (~4 minutes): the allocator's latency floor (search.latency_floor_us),
# A/B on the quick preset. A fill of the compile cache cut at 45 s, then the quick preset with the
# floor off (0: the roofline alone, as before) and on (2 us, the new default), each cut at 60 s into
# its own archive. Per run: evaluations per shape and the per-shape bests against the libraries.
# One run each: says where the evaluations went, not whether the bests differ beyond noise.
#   OUT=/some/folder bash benchmarks/session13/run_e.sh
. benchmarks/device_common.sh
device_setup
args=(+experiment=quick llm=none 'evaluator.gpus=[0]' search.progress=false)
export EVO_CACHE_DIR=/tmp/evo-cache
mkdir -p /tmp/we && cd /tmp/we
timeout 45 evo run "${args[@]}" archive.path=/tmp/we/fill.sqlite > "$OUT/fill.log" 2>&1
for us in 0 2; do
  timeout 60 evo run "${args[@]}" search.latency_floor_us=$us archive.path=/tmp/we/floor$us.sqlite > "$OUT/floor$us.log" 2>&1
  { echo "== search.latency_floor_us=$us"
    python3 -c "import sqlite3, sys; db = sqlite3.connect(sys.argv[1]); print(db.execute('select status, count(*) from evaluations group by status').fetchall()); [print(f'{m}x{n}x{k}: {c}') for m, n, k, c in db.execute('select M, N, K, count(*) from evaluations group by M, N, K order by 4 desc')]" /tmp/we/floor$us.sqlite
    python3 -m evo archive elites /tmp/we/floor$us.sqlite; } >> "$OUT/floor_ab.txt" 2>&1
done
cat "$OUT/floor_ab.txt"
cd "$REPO" && device_done
