#!/usr/bin/env bash
# The last GPU session's command (run on the H200 machine through the device tool; wheels in .whl).
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export EVO_CACHE_DIR=/tmp/evo-cache PYTHONUNBUFFERED=1
date -u
set -o pipefail
timeout 100 python3 -m pytest -m gpu -q -x -k "hopper_variants" tests/test_gpu.py 2>&1 | tail -8 | tee $OUT/pytest_gpu.log || exit 1
K=/tmp/k; mkdir -p $K
python3 -c "
from evo.families import FAMILIES; f = FAMILIES['hopper']
open('$K/plain.cu', 'w').write(f.render(f.default)); open('$K/pair.cu', 'w').write(f.render(dict(f.default, CLUSTER_M=2)))"
(timeout 60 python3 -m evo bench shapes=inline 'shapes.list=[8192x8192x8192,4096x4096x4096]' "kernels=[$K/plain.cu,$K/pair.cu]" evaluator.draws=1 evaluator.replays=5 evaluator.target_replay_ms=5 evaluator.timeout_s=20 'evaluator.libraries=[torch]' archive.path=$OUT/diag3.sqlite search.progress=false 2>&1 | tee $OUT/multicast_diag3.log)
date -u
(timeout 170 python3 benchmarks/seeds/coverage_check.py $OUT/coverage hopper 2>&1 | tee $OUT/coverage_hopper.log)
date -u
cd $OUT && gzip coverage/coverage.csv
