#!/usr/bin/env bash
# The last GPU session's command (run on the H200 machine through the device tool; wheels in .whl).
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export EVO_CACHE_DIR=/tmp/evo-cache PYTHONUNBUFFERED=1
date -u
set -o pipefail
timeout 120 python3 -m pytest -m gpu -q -x -k "hopper_variants" tests/test_gpu.py 2>&1 | tail -8 | tee $OUT/pytest_gpu.log || exit 1
date -u
(timeout 260 python3 benchmarks/seeds/coverage_check.py $OUT/coverage 2>&1 | tee $OUT/coverage.log)
date -u
(timeout 150 python3 -m evo sweep family=hopper shapes=inline 'shapes.list=[4096x4096x4096,8192x8192x8192,16384x16384x1024,4096x16384x4096,16384x4096x16384,2048x28672x4096]' sweep.sample=shortlist sweep.budget=6 evaluator.draws=1 evaluator.replays=5 evaluator.target_replay_ms=5 evaluator.timeout_s=20 archive.path=$OUT/multicast.sqlite search.progress=false 2>&1 | tee $OUT/multicast.log)
date -u
cd $OUT && gzip coverage/coverage.csv
