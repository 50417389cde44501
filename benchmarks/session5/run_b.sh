#!/usr/bin/env bash
# Fifth session, second command, two H200s (about 9 minutes): (1) the quick preset's evaluations/s on
# GPU 0 after the cheaper host work between generations (cold cache, then warm), QUICK_S each;
# (2) the random sweep of the tensor-core families (random_tc, 3 seeds) added to the fourth compare
# (its archives in benchmarks/search/compare24_h200_run4/archives.tgz), then every arm re-timed.
set -u -o pipefail
OUT=${OUT:?}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH PYTHONSAFEPATH=1 EVO_CACHE_DIR=/tmp/evo-cache
nvidia-smi --query-gpu=index,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader | tee $OUT/gpu.txt
QUICK_S=${QUICK_S:-80} bash benchmarks/search/quick_throughput.sh
rm -rf /tmp/x benchmarks/search/compare24_h200 && mkdir -p /tmp/x benchmarks/search/compare24_h200
tar xzf benchmarks/search/compare24_h200_run4/archives.tgz -C /tmp/x && cp -r /tmp/x/compare24/. benchmarks/search/compare24_h200/
rm -rf $OUT/compare24  # a machine may keep an earlier lease's files under the same OUT
SEEDS=3 ARMS='[shortlist,search,uniform,random_tc]' LIMIT_S=${LIMIT_S:-350} \
  EXTRA="evaluator.replays=3 evaluator.target_replay_ms=10 evaluator.draws=2" bash benchmarks/search/compare_gpu.sh 2>&1 | tail -45
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader | tee -a $OUT/gpu.txt
cd $OUT && tar czf compare24.tgz compare24 compare24.run.log compare24.log quick_*.log && rm -rf compare24 compare24.run.log quick_cold.log quick_warm.log; ls -la $OUT
