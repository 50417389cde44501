#!/usr/bin/env bash
# Issue 13, second GPU pass: shortlist sweep (12 per shape, libraries in the same run) on the shapes
# where the new kernels apply: the 29 llm_layers shapes with M <= 64 and the 10 worst shapes named in
# the issue (M just past a tile multiple, small M). shapes_b.txt holds the list.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH EVO_CACHE_DIR=/tmp/evo-cache PYTHONUNBUFFERED=1
REPO=$PWD W=/tmp/w; mkdir -p $W
q() { nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader; }
{ date -u; q; } | tee $OUT/gpu.txt
cd $W
timeout ${SWEEP_S:-300} evo sweep shapes=inline "shapes.list=$(cat $REPO/benchmarks/families/shapes_b.txt)" \
  sweep.sample=shortlist sweep.budget=${BUDGET:-12} archive.path=$W/small_m.sqlite 2>&1 | grep -v "^sweep \[" | tail -30 | tee $OUT/sweep_small_m.log
evo archive elites $W/small_m.sqlite > $OUT/sweep_small_m_per_shape.txt 2>&1
cp $W/small_m.sqlite $OUT/ 2>/dev/null
{ date -u; q; } | tee -a $OUT/gpu.txt
