#!/usr/bin/env bash
# Seventh session, second command, on the two-H200 machine (about 10 minutes), after the shortlist's
# transposed picks moved to every fourth place:
#  GPU 0: llm_layers shortlist sweep at 16 picks (3 replays of 10 ms, 2 draws), libraries in the same run;
#  GPU 1: grid125 at 12 picks, same settings (cut at 555 s: rank-major, so a cut loses the last ranks).
#   OUT=/some/folder bash benchmarks/session7/run_b.sh
set -uo pipefail
OUT=${OUT:?}
REPO=$PWD
q() { nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader; }
{ date -u; q; } | tee "$OUT/gpu.txt"
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1 PYTHONSAFEPATH=1
(
  export CUDA_VISIBLE_DEVICES=0 EVO_CACHE_DIR=/tmp/evo-cache0
  mkdir -p /tmp/w0 && cd /tmp/w0 && date -u
  timeout -s INT 560 python3 -m evo sweep shapes=llm_layers sweep.sample=shortlist sweep.budget=16 \
    evaluator.replays=3 evaluator.target_replay_ms=10 evaluator.draws=2 search.progress=false \
    archive.path=/tmp/w0/llm_layers.sqlite 2>&1 | tail -30
  date -u
  python3 -m evo archive elites --params /tmp/w0/llm_layers.sqlite > "$OUT/llm_layers_per_shape.txt" 2>&1
  python3 -m evo archive failures /tmp/w0/llm_layers.sqlite > "$OUT/llm_layers_failures.txt" 2>&1
  gzip -c /tmp/w0/llm_layers.sqlite > "$OUT/llm_layers.sqlite.gz"
) > "$OUT/llm_layers_sweep.log" 2>&1 &
A=$!
(
  export CUDA_VISIBLE_DEVICES=1 EVO_CACHE_DIR=/tmp/evo-cache1
  mkdir -p /tmp/w1 && cd /tmp/w1 && date -u
  timeout -s INT 555 python3 -m evo sweep shapes=grid125 sweep.sample=shortlist sweep.budget=12 \
    evaluator.replays=3 evaluator.target_replay_ms=10 evaluator.draws=2 search.progress=false \
    archive.path=/tmp/w1/grid125.sqlite 2>&1 | tail -30
  date -u
  python3 -m evo archive elites --params /tmp/w1/grid125.sqlite > "$OUT/grid125_per_shape.txt" 2>&1
  python3 -m evo archive failures /tmp/w1/grid125.sqlite > "$OUT/grid125_failures.txt" 2>&1
  gzip -c /tmp/w1/grid125.sqlite > "$OUT/grid125.sqlite.gz"
) > "$OUT/grid125_sweep.log" 2>&1 &
B=$!
wait $A $B
{ date -u; q; } | tee -a "$OUT/gpu.txt"
ls -la "$OUT"
