#!/usr/bin/env bash
# After the review fixes (projection tolerance from the correctness contract, server-mode L2 flush):
# the GPU tests (self-test included) and the sealed-vs-plain table again.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH EVO_CACHE_DIR=/tmp/evo-cache PYTHONUNBUFFERED=1
mkdir -p /tmp/w /tmp/gt && cp -r tests /tmp/gt/ && cp benchmarks/timing/sealed_vs_plain.py /tmp/w/
cd /tmp/gt && date -u | tee $OUT/review_pytest_gpu.log
timeout 300 python3 -m pytest -q -p no:cacheprovider -rs tests/test_gpu.py 2>&1 | tail -12 | tee -a $OUT/review_pytest_gpu.log
cd /tmp/w && timeout 150 python3 sealed_vs_plain.py 2>&1 | tail -20 | tee $OUT/review_sealed_vs_plain.log
timeout 60 evo bench shapes=inline 'shapes.list=[4096x4096x4096,77x4096x4096]' 'evaluator.modes=[rotating,server]' 'evaluator.libraries=[torch]' evaluator.replays=3 archive.path=/tmp/w/b.sqlite 2>&1 | tail -8 | tee $OUT/review_server_bench.log
