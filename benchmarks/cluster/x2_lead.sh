#!/usr/bin/env bash
# The lead's one-command version of x2_session.sh (parts a and b with shorter limits, to fit the
# session's device time): evo installed from its wheel in .whl (with Dask's wheels), run outside the
# checkout. selftest and GPU tests through the Dask pool, hang isolation, sweep throughput 1 vs 2 GPUs.
set -u -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH EVO_CACHE_DIR=/tmp/evo-cache PYTHONUNBUFFERED=1
REPO=$PWD; mkdir -p /tmp/gt && cp -r tests /tmp/gt/ && cd /tmp/gt
python3 -c "import distributed, evo; print('distributed', distributed.__version__, 'evo', evo.__version__, evo.__file__)" | tee $OUT/versions.txt || exit 1
nvidia-smi --query-gpu=index,name,clocks.sm,temperature.gpu --format=csv | tee $OUT/gpus.txt
stamp() { echo "== $(date -u +%H:%M:%S) $*" | tee -a $OUT/stamps.txt; }
stamp selftest
timeout ${SELFTEST_S:-150} evo selftest evaluator.cluster=local evaluator.timeout_s=15 evaluator.draws=2 \
  evaluator.replays=3 evaluator.target_replay_ms=5 archive.path=/tmp/selftest_dask.sqlite 2>&1 | tail -60 > $OUT/selftest_dask.log
echo "exit $?" >> $OUT/selftest_dask.log; tail -3 $OUT/selftest_dask.log
stamp pytest
EVO_TEST_CLUSTER=local timeout ${PYTEST_S:-130} python3 -m pytest -p no:cacheprovider -m gpu -q -rs tests/test_gpu.py 2>&1 | tail -15 | tee $OUT/pytest_gpu_dask.log
stamp hang
timeout ${HANG_S:-90} python3 $REPO/benchmarks/cluster/hang_isolation.py local 2>&1 | tail -40 | tee $OUT/hang_isolation.log
stamp sweeps
# the sweep part of throughput_lead.sh with this run's settings: 12 per shape, the three default libraries
BUDGET=${BUDGET:-12} LIBS='[torch,cublaslt_heuristic,cublaslt_autotuned]' SWEEP_S=${SWEEP_S:-75} REPO=$REPO \
  SPECS="warmup: local_1gpu:evaluator.gpus=[0] dask_2gpu:evaluator.cluster=local" \
  bash $REPO/benchmarks/cluster/throughput_lead.sh
stamp done
