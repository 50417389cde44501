#!/usr/bin/env bash
# Fifth session, first command, on the two-H200 machine (about 9 minutes):
#  GPU 0: issue 16's full session (benchmarks/dispatch/gpu_session.sh: every family's shortlist, 7 per
#         shape, M 1..512 of four Llama-3-8B weights; export --verify; the op's GPU tests; overhead.py,
#         now with the same kernels launched without PDL beside; block.py), kernels launched as
#         programmatic dependents;
#  GPU 1: issue 13's llm_layers shortlist sweep (87 shapes, 12 picks each, libraries in the same run,
#         3 replays of 10 ms, 2 draws), cut at SWEEP_S; rank-major, so a cut sweep has every shape's top picks.
#   OUT=/some/folder bash benchmarks/session5/run_a.sh        (from the repository root, .whl/ carried)
set -uo pipefail
OUT=${OUT:?}
REPO=$PWD
q() { nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader; }
{ date -u; q; } | tee "$OUT/gpu.txt"
(CUDA_VISIBLE_DEVICES=0 OUT=$OUT/dispatch bash benchmarks/dispatch/gpu_session.sh > "$OUT/dispatch_session.log" 2>&1) &
DISPATCH=$!
(
  set -o pipefail
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site2 .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site2 PATH=/tmp/site2/bin:$PATH EVO_CACHE_DIR=/tmp/evo-cache2 PYTHONUNBUFFERED=1
  export CUDA_VISIBLE_DEVICES=1
  mkdir -p /tmp/w2 && cd /tmp/w2
  date -u
  timeout -s INT ${SWEEP_S:-520} python3 -m evo sweep shapes=llm_layers sweep.sample=shortlist sweep.budget=${BUDGET:-12} \
    evaluator.replays=3 evaluator.target_replay_ms=10 evaluator.draws=2 search.progress=false \
    archive.path=/tmp/w2/llm_layers.sqlite 2>&1 | tail -40
  date -u
  python3 -m evo archive elites /tmp/w2/llm_layers.sqlite > "$OUT/llm_layers_per_shape.txt" 2>&1
  python3 -m evo archive elites /tmp/w2/llm_layers.sqlite --json > "$OUT/llm_layers_per_shape.json" 2>/dev/null
  gzip -c /tmp/w2/llm_layers.sqlite > "$OUT/llm_layers.sqlite.gz"
) > "$OUT/llm_layers_sweep.log" 2>&1 &
SWEEP=$!
wait $DISPATCH $SWEEP
{ date -u; q; } | tee -a "$OUT/gpu.txt"
for f in session.log overhead.log block.log export_verify.log pytest_dispatch_gpu.log table.log sweep.log extension_build.log; do
  cp "$OUT/dispatch/$f" "$OUT/dispatch_$f" 2>/dev/null
done
rm -f "$OUT"/dispatch/exported/*.cubin
tar czf "$OUT/dispatch_files.tgz" -C "$OUT" dispatch && rm -rf "$OUT/dispatch"
ls -la "$OUT"
