#!/usr/bin/env bash
# Tenth session, last GPU command, one H200 (~3 minutes): the quick preset's throughput, cold compile
# cache, cut at 80 s, as the sixth and seventh sessions measured it (benchmarks/session6/run_d.sh: 2.47
# evaluations/s cold in the seventh), then once more with the cache warm, cut at 60 s.
#   OUT=/some/folder bash benchmarks/session10/run_d1.sh
. benchmarks/device_common.sh
device_setup
export EVO_CACHE_DIR=/tmp/evo-cache
mkdir -p /tmp/w && cd /tmp/w && rm -f /tmp/w/quick_*.sqlite*
for run in cold:80 warm:60; do
  name=${run%%:*} seconds=${run##*:}
  t0=$(date +%s.%N)
  timeout "$seconds" evo run +experiment=quick llm=none 'evaluator.gpus=[0]' search.progress=false \
    archive.path="/tmp/w/quick_$name.sqlite" > "$OUT/quick_$name.log" 2>&1
  echo "quick $name exit $?"
  python3 "$REPO/benchmarks/cluster/throughput.py" \
    "quick_$name=/tmp/w/quick_$name.sqlite:$(python3 -c "print($(date +%s.%N) - $t0)")" 2>&1 | tee -a "$OUT/quick_throughput.txt"
done
cd "$REPO" && device_done
