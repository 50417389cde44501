#!/usr/bin/env bash
# Issue 17 on the two-GPU H200 machine (nvidia-h200-x2): evaluation through the Dask pool.
# Run from the repository root through the device tool, with the wheels in .whl/ (gpu_wheels.sh,
# plus Dask: `benchmarks/gpu_wheels.sh dask distributed` adds dask, distributed and what they need).
# Each part fits the tool's 10 minutes; logs and tables go to $OUT.
#
#   bash benchmarks/cluster/x2_session.sh a   # ~5 min: evo selftest and the GPU tests through the Dask pool
#   bash benchmarks/cluster/x2_session.sh b   # ~5 min: a hang on one GPU vs the other; sweep throughput 1 vs 2 GPUs
#
# What to look at: a/selftest_dask.log ends "N/N as expected" and its PASS lines name both GPUs'
# workers; a/pytest_gpu_dask.log "15 passed"; b/hang_isolation.log "verdict: PASS"; b/throughput.txt
# the "vs first" column of dask_2gpu (target >= 1.80) and local_2gpu (the same GPUs without Dask).
set -u -o pipefail
part=${1:-a}
: "${OUT:?set OUT to the folder for the results}"
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit 1
export EVO_CACHE_DIR=/tmp/evo-cache PYTHONUNBUFFERED=1
python3 -c "import distributed" || { echo "no Dask here: add its wheels (benchmarks/gpu_wheels.sh dask distributed)"; exit 1; }
nvidia-smi -L | tee $OUT/gpus_$part.txt
date -u

if [ "$part" = a ]; then
  # the self-test's bad kernels, each through a Dask worker's GPU process (a hang costs the 15 s timeout)
  timeout 240 python3 -m evo selftest evaluator.cluster=local evaluator.timeout_s=15 evaluator.draws=2 \
    evaluator.replays=3 evaluator.target_replay_ms=5 archive.path=$OUT/selftest_dask.sqlite 2>&1 | tee $OUT/selftest_dask.log
  date -u
  # the GPU tests with the evaluator on the Dask pool (tests/test_gpu.py reads EVO_TEST_CLUSTER)
  EVO_TEST_CLUSTER=local timeout 300 python3 -m pytest -m gpu -q tests/test_gpu.py 2>&1 | tail -15 | tee $OUT/pytest_gpu_dask.log
  date -u
fi

if [ "$part" = b ]; then
  timeout 150 python3 benchmarks/cluster/hang_isolation.py local 2>&1 | tee $OUT/hang_isolation.log
  date -u
  # the same random sweep (ampere, 7 shapes, 24 configurations each) four times; the first compiles
  # everything (warm-up: nvcc is not what is measured), then one GPU, two GPUs through Dask, two
  # GPUs through the local pool. Each archive is fresh, so each run times its own libraries.
  SWEEP="sweep family=ampere shapes=smoke sweep.sample=random sweep.budget=24 evaluator.draws=1 evaluator.replays=3
         evaluator.target_replay_ms=5 evaluator.timeout_s=20 search.progress=false"
  runs=()
  for spec in "warmup:" "local_1gpu:evaluator.gpus=[0]" "dask_2gpu:evaluator.cluster=local" "local_2gpu:"; do
    name=${spec%%:*}; extra=${spec#*:}
    t0=$(date +%s.%N)
    timeout 200 python3 -m evo $SWEEP $extra archive.path=$OUT/sweep_$name.sqlite > $OUT/sweep_$name.log 2>&1
    echo "$name: exit $? after $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s" | tee -a $OUT/sweep_walls.txt
    [ "$name" = warmup ] || runs+=("$name=$OUT/sweep_$name.sqlite:$(python3 -c "print($(date +%s.%N) - $t0)")")
  done
  python3 benchmarks/cluster/throughput.py "${runs[@]}" 2>&1 | tee $OUT/throughput.txt
  date -u
fi
