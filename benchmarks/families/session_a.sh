#!/usr/bin/env bash
# Issue 13, first GPU pass: correctness of the new "skinny" family and of hopper's wave-quantized
# split counts on every shape they declare (coverage check), then a shortlist sweep (12 per shape,
# libraries in the same run) over the widened llm_layers set. evo from its wheel, run outside the checkout.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH EVO_CACHE_DIR=/tmp/evo-cache PYTHONUNBUFFERED=1
REPO=$PWD W=/tmp/w; mkdir -p $W
q() { nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader; }
{ date -u; q; } | tee $OUT/gpu.txt
cd $W
timeout ${COVER_S:-170} python3 $REPO/benchmarks/seeds/coverage_check.py $OUT/coverage skinny hopper 2>&1 | tail -12 | tee $OUT/coverage.log
{ date -u; q; } | tee -a $OUT/gpu.txt
timeout ${SWEEP_S:-330} evo sweep shapes=llm_layers sweep.sample=shortlist sweep.budget=${BUDGET:-12} \
  archive.path=$W/llm_layers.sqlite 2>&1 | tail -30 | tee $OUT/sweep_llm_layers.log
evo archive elites $W/llm_layers.sqlite > $OUT/sweep_llm_layers_per_shape.txt 2>&1
evo archive elites $W/llm_layers.sqlite --json > $OUT/sweep_llm_layers_per_shape.json 2>/dev/null
cp $W/llm_layers.sqlite $OUT/ 2>/dev/null
{ date -u; q; } | tee -a $OUT/gpu.txt
