#!/usr/bin/env bash
# GPU check after the packaging/layering refactor (issue 11): evo installed from its wheel (built
# on the dev machine, in .whl with the dependencies the GPU machine lacks), run from outside the
# checkout; the GPU tests, the self-test, a shortlist sweep, a short search and a bench.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH EVO_CACHE_DIR=/tmp/evo-cache PYTHONUNBUFFERED=1
REPO=$PWD W=/tmp/w
mkdir -p $W /tmp/gt && cp -r tests /tmp/gt/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,temperature.gpu,power.draw --format=csv | tee $OUT/gpu.txt
date -u | tee -a $OUT/gpu.txt
cd /tmp/gt
python3 -c "import evo, evo.archive, evo.conf; print('evo', evo.__version__, 'from', evo.__file__, evo.archive.__file__)" | tee $OUT/pytest_gpu.log
timeout 300 python3 -m pytest -q -p no:cacheprovider -rs tests/test_gpu.py 2>&1 | tail -25 | tee -a $OUT/pytest_gpu.log
cd $W
step() { name=$1; shift; echo "\$ evo $*" >> $OUT/cli.log; timeout "$T" evo "$@" 2>&1 | tail -40 >> $OUT/cli.log; echo "exit $?" >> $OUT/cli.log; }
T=150 step selftest selftest evaluator.timeout_s=15 evaluator.draws=2 evaluator.replays=3 evaluator.target_replay_ms=5 archive.path=$W/selftest.sqlite
T=150 step sweep sweep shapes=smoke sweep.sample=shortlist sweep.budget=6 evaluator.draws=2 evaluator.replays=3 evaluator.target_replay_ms=5 evaluator.timeout_s=15 archive.path=$W/sweep.sqlite
T=150 step run run +experiment=quick search.max_evaluations=48 llm=none evaluator.draws=2 evaluator.replays=3 evaluator.target_replay_ms=5 evaluator.timeout_s=15 archive.path=$W/run.sqlite
T=60 step bench -q bench shapes=inline 'shapes.list=[4096x4096x4096,77x4096x4096]' evaluator.replays=5 evaluator.target_replay_ms=10 archive.path=$W/bench.sqlite
evo archive runs $W/selftest.sqlite $W/sweep.sqlite $W/run.sqlite $W/bench.sqlite >> $OUT/cli.log 2>&1
cat $W/*.run*.log > $OUT/run_logs.txt
date -u | tee -a $OUT/gpu.txt
