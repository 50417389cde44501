#!/usr/bin/env bash
# Sixth session, last command, one H200 (about 4 minutes): main after merging the `tput` evaluator
# (sealed timing without a host wait per chunk; verdicts copied to pinned host memory per chunk):
#  1. evo selftest (every deliberately bad kernel still caught; hang limit 20 s to save device time);
#  2. the quick preset, cold compile cache, cut at 80 s, as the fifth session's main measured it
#     (benchmarks/search/quick_h200_after_gaps/: 1.97 evaluations/s cold, 1.89 warm).
#   OUT=/some/folder bash benchmarks/session6/run_d.sh
set -uo pipefail
OUT=${OUT:?}
REPO=$PWD
q() { nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader; }
{ date -u; q; } | tee "$OUT/gpu.txt"
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 EVO_CACHE_DIR=/tmp/evo-cache
mkdir -p /tmp/w && cd /tmp/w
echo "== $(date -u +%H:%M:%S) selftest"
timeout 150 evo selftest evaluator.timeout_s=20 > "$OUT/selftest.log" 2>&1; echo "selftest exit $?"
tail -3 "$OUT/selftest.log"
echo "== $(date -u +%H:%M:%S) quick cold"
t0=$(date +%s.%N)
timeout 80 evo run +experiment=quick llm=none 'evaluator.gpus=[0]' search.progress=false \
  archive.path=/tmp/w/quick_cold.sqlite > "$OUT/quick_cold.log" 2>&1
echo "quick exit $?"
python3 "$REPO/benchmarks/cluster/throughput.py" "quick_cold=/tmp/w/quick_cold.sqlite:$(python3 -c "print($(date +%s.%N) - $t0)")" \
  2>&1 | tee "$OUT/quick_throughput.txt"
{ date -u; q; } | tee -a "$OUT/gpu.txt"
