#!/usr/bin/env bash
# Sixth session, third command, on the two-H200 machine (about 8.5 minutes), nothing hostile beside
# (run_b's selftest on one GPU disturbed the other's timings: benchmarks/session6/README.md):
#  GPU 0: llm_layers shortlist sweep again, with the shortlist as corrected after run_a (no wave-filling
#         cluster split-K), same settings as run_a;
#  GPU 1: evo compare, search vs shortlist at 24 evaluations per shape, one seed, on compare_gpu.sh's
#         14 shapes, with the TAIL_SPLIT gene and the new shortlist (3 replays of 10 ms, 2 draws, as run4).
#   OUT=/some/folder bash benchmarks/session6/run_c.sh
set -uo pipefail
OUT=${OUT:?}
REPO=$PWD
q() { nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader; }
{ date -u; q; } | tee "$OUT/gpu.txt"
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
(
  export CUDA_VISIBLE_DEVICES=0 EVO_CACHE_DIR=/tmp/evo-cache0
  mkdir -p /tmp/w0 && cd /tmp/w0 && date -u
  timeout -s INT 480 python3 -m evo sweep shapes=llm_layers sweep.sample=shortlist sweep.budget=12 \
    evaluator.replays=3 evaluator.target_replay_ms=10 evaluator.draws=2 search.progress=false \
    archive.path=/tmp/w0/llm_layers.sqlite 2>&1 | tail -30
  date -u
  python3 -m evo archive elites /tmp/w0/llm_layers.sqlite > "$OUT/llm_layers_per_shape.txt" 2>&1
  gzip -c /tmp/w0/llm_layers.sqlite > "$OUT/llm_layers.sqlite.gz"
) > "$OUT/llm_layers_sweep.log" 2>&1 &
A=$!
(
  export CUDA_VISIBLE_DEVICES=1 EVO_CACHE_DIR=/tmp/evo-cache1
  mkdir -p /tmp/o1 && OUT=/tmp/o1 BUDGET=24 SEEDS=1 ARMS='[search,shortlist]' LIMIT_S=470 \
    EXTRA="evaluator.replays=3 evaluator.target_replay_ms=10 evaluator.draws=2" bash benchmarks/search/compare_gpu.sh
  cp /tmp/o1/compare24.log "$OUT/compare24.log"
  tar czf "$OUT/compare24_archives.tgz" -C /tmp/o1 compare24 compare24.run.log
) > "$OUT/compare.log" 2>&1 &
B=$!
wait $A $B
{ date -u; q; } | tee -a "$OUT/gpu.txt"
ls -la "$OUT"
