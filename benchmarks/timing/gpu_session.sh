#!/usr/bin/env bash
# GPU session for the sealed timing and the fault handling (issue 12): GPU tests (the self-test
# with the new timer-gaming and fault cases included), sealed vs plain timing side by side, and the
# shortlist sweep of benchmarks/refactor/ again for the wall time and the ratios.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH EVO_CACHE_DIR=/tmp/evo-cache PYTHONUNBUFFERED=1
W=/tmp/w; mkdir -p $W /tmp/gt && cp -r tests /tmp/gt/ && cp benchmarks/timing/sealed_vs_plain.py $W/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,temperature.gpu,power.draw --format=csv | tee $OUT/gpu.txt
cd /tmp/gt && date -u | tee $OUT/pytest_gpu.log
timeout 330 python3 -m pytest -q -p no:cacheprovider -x -rs tests/test_gpu.py 2>&1 | tail -30 | tee -a $OUT/pytest_gpu.log
cd $W && date -u | tee $OUT/sealed_vs_plain.log
timeout 150 python3 sealed_vs_plain.py 2>&1 | tail -30 | tee -a $OUT/sealed_vs_plain.log
date -u | tee $OUT/sweep.log
( time timeout 120 evo sweep shapes=smoke sweep.sample=shortlist sweep.budget=6 evaluator.draws=2 evaluator.replays=3 evaluator.target_replay_ms=5 evaluator.timeout_s=15 archive.path=$W/sweep.sqlite ) 2>&1 | tail -20 | tee -a $OUT/sweep.log
