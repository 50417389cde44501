#!/usr/bin/env bash
# Issue 17 on the two-H200 machine, third pass (one command, ~8 minutes): the driver's cold compile
# rate by nvcc worker count; sweep throughput of one GPU, two GPUs through the local pool and two
# through Dask with and without the per-worker queue (7 shapes x 48, torch as the library); the GPU
# tests through the Dask pool with a limit long enough to finish. evo from its wheel in .whl.
set -u -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH EVO_CACHE_DIR=/tmp/evo-cache PYTHONUNBUFFERED=1
ROOT=$OUT; export OUT=/tmp/x2third; mkdir -p $OUT  # everything is packed into $ROOT/x2_third.tgz at the end
REPO=$PWD; mkdir -p /tmp/gt && cp -r tests /tmp/gt/ && cd /tmp/gt
python3 -c "import distributed, evo; print('distributed', distributed.__version__, 'evo', evo.__version__, evo.__file__)" | tee $OUT/versions.txt || exit 1
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv | tee -a $OUT/versions.txt
stamp() { echo "== $(date -u +%H:%M:%S) $*" | tee -a $OUT/stamps.txt; }
stamp compile rate
timeout ${COMPILE_S:-90} python3 $REPO/benchmarks/cluster/compile_rate.py 64 8,16,32 2>&1 | tee $OUT/compile_rate.txt
stamp sweeps
BUDGET=${BUDGET:-48} LIBS='[torch]' SWEEP_S=${SWEEP_S:-110} REPO=$REPO \
  SPECS="warmup: local_1gpu:evaluator.gpus=[0] local_2gpu: dask_2gpu:evaluator.cluster=local dask_2gpu_noqueue:evaluator.cluster=local@evaluator.cluster_queue=0" \
  bash $REPO/benchmarks/cluster/throughput_lead.sh
rm -f $OUT/sweep_*.sqlite  # (the table above is what is kept; at most 8 files come back)
stamp pytest
EVO_TEST_CLUSTER=local timeout ${PYTEST_S:-200} python3 -m pytest -p no:cacheprovider -m gpu -q -rs tests/test_gpu.py 2>&1 | tail -15 | tee $OUT/pytest_gpu_dask.log
stamp done
cat $OUT/compile_rate.txt $OUT/throughput.txt
tar czf $ROOT/x2_third.tgz -C $OUT .
