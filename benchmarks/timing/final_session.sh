#!/usr/bin/env bash
# Last GPU check of the session (issues 11 and 12 together): the wheel-installed evo, the GPU tests,
# `evo selftest` through the CLI, a shortlist sweep and a short search, each as a recorded session.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH EVO_CACHE_DIR=/tmp/evo-cache PYTHONUNBUFFERED=1
W=/tmp/w; mkdir -p $W /tmp/gt && cp -r tests /tmp/gt/
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.sm,temperature.gpu,power.draw --format=csv | tee $OUT/final_gpu.txt
cd /tmp/gt && date -u | tee $OUT/final_pytest_gpu.log
timeout 300 python3 -m pytest -q -p no:cacheprovider -rs tests/test_gpu.py 2>&1 | tail -12 | tee -a $OUT/final_pytest_gpu.log
cd $W
step() { echo "\$ evo $*" >> $OUT/final_cli.log; timeout "$T" evo "$@" >> $OUT/final_cli.log 2>&1; echo "exit $?" >> $OUT/final_cli.log; }
T=200 step selftest evaluator.timeout_s=15 evaluator.draws=2 evaluator.replays=3 evaluator.target_replay_ms=5 archive.path=$W/selftest.sqlite
T=120 step sweep shapes=llm_layers sweep.sample=shortlist sweep.budget=4 evaluator.draws=2 evaluator.replays=3 evaluator.target_replay_ms=5 evaluator.timeout_s=15 archive.path=$W/sweep.sqlite
T=120 step -q run +experiment=quick search.max_evaluations=40 llm=none evaluator.draws=2 evaluator.replays=3 evaluator.target_replay_ms=5 evaluator.timeout_s=15 archive.path=$W/run.sqlite
evo archive runs $W/selftest.sqlite $W/sweep.sqlite $W/run.sqlite >> $OUT/final_cli.log 2>&1
evo archive failures $W/selftest.sqlite >> $OUT/final_cli.log 2>&1
date -u | tee -a $OUT/final_gpu.txt
