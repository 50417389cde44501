#!/usr/bin/env bash
# Session 20, one H200, ~2 minutes: the 8 llm_layers shapes whose 24-pick shortlist the 6-stage rule changes
# (split-K over L2, 64x128 or 128x64 tiles, K >= 8192), swept as session 19 swept the whole set (3 replays of
# 10 ms, 2 draws, libraries in the same run). Into $OUT/llm_longk_*.
#   OUT=/some/folder bash benchmarks/session20/run_llm_longk.sh
. benchmarks/device_common.sh
device_setup
(
  export EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1
  mkdir -p /tmp/w && cd /tmp/w
  timeout -s INT 170 python3 -m evo sweep shapes=inline \
    'shapes.list=[333x4096x14336,32x10240x8192,47x8192x8192,2x8192x28672,3x2304x9216,129x2304x9216,47x3072x8192,77x4096x14336]' \
    sweep.sample=shortlist sweep.budget=24 evaluator.replays=3 evaluator.target_replay_ms=10 evaluator.draws=2 \
    search.progress=false archive.path=/tmp/w/llm_longk.sqlite 2>&1 | tail -14
  python3 -m evo archive elites --params /tmp/w/llm_longk.sqlite > "$OUT/llm_longk_per_shape.txt" 2>&1
  gzip -c /tmp/w/llm_longk.sqlite > "$OUT/llm_longk.sqlite.gz"
) > "$OUT/llm_longk_sweep.log" 2>&1
cat "$OUT/llm_longk_sweep.log"
device_done
