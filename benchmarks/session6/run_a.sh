#!/usr/bin/env bash
# Sixth session, first command, on the two-H200 machine (about 9 minutes): issue 13's shortlist sweeps
# with the new hopper genome and shortlist (TAIL_SPLIT: the last round's tiles split over K; 64x192
# tiles; cluster split-K sized to fill whole waves; ampere above M = 64 only where K <= 128), libraries
# (torch, cuBLASLt heuristic and autotuned) timed in the same run, 12 picks per shape,
# 3 replays of 10 ms, 2 draws (as the fifth session's llm_layers sweep, for a like-for-like comparison):
#  GPU 0: llm_layers (87 shapes); GPU 1: grid125 (125 shapes). Each cut at SWEEP_S (rank-major order).
#   OUT=/some/folder bash benchmarks/session6/run_a.sh        (from the repository root, .whl/ carried)
set -uo pipefail
OUT=${OUT:?}
q() { nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader; }
{ date -u; q; } | tee "$OUT/gpu.txt"
sweep() {  # $1 GPU, $2 shape set
  set -o pipefail
  local site=/tmp/site$1 work=/tmp/w$1
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target $site .whl/*.whl || exit 1
  export PYTHONPATH=$site PATH=$site/bin:$PATH EVO_CACHE_DIR=/tmp/evo-cache$1 PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=$1
  mkdir -p $work && cd $work
  date -u
  timeout -s INT ${SWEEP_S:-500} python3 -m evo sweep shapes=$2 sweep.sample=shortlist sweep.budget=${BUDGET:-12} \
    evaluator.replays=3 evaluator.target_replay_ms=10 evaluator.draws=2 search.progress=false \
    archive.path=$work/$2.sqlite 2>&1 | tail -40
  date -u
  python3 -m evo archive elites $work/$2.sqlite > "$OUT/$2_per_shape.txt" 2>&1
  gzip -c $work/$2.sqlite > "$OUT/$2.sqlite.gz"
}
(sweep 0 llm_layers > "$OUT/llm_layers_sweep.log" 2>&1) &
A=$!
(sweep 1 grid125 > "$OUT/grid125_sweep.log" 2>&1) &
B=$!
wait $A $B
{ date -u; q; } | tee -a "$OUT/gpu.txt"
ls -la "$OUT"
