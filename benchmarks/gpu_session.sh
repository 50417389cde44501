#!/usr/bin/env bash
# The last GPU session's command (run on the H200 machine through the device tool; wheels in .whl).
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export EVO_CACHE_DIR=/tmp/evo-cache PYTHONUNBUFFERED=1
date -u
(timeout 120 python3 -m pytest -m gpu -q -k "hopper" tests/test_gpu.py 2>&1 | tail -5 | tee $OUT/pytest_gpu.log)
date -u
(timeout 400 python3 -m evo sweep shapes=grid125 sweep.sample=shortlist sweep.budget=15 evaluator.draws=2 evaluator.replays=5 evaluator.target_replay_ms=5 evaluator.timeout_s=15 archive.path=$OUT/sweep.sqlite search.progress=false 2>&1 | tee $OUT/sweep.log)
date -u
