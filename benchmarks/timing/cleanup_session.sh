#!/usr/bin/env bash
# After the clean-up commits (pool receive path, one timed-region helper): the GPU tests again.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH EVO_CACHE_DIR=/tmp/evo-cache PYTHONUNBUFFERED=1
mkdir -p /tmp/gt && cp -r tests /tmp/gt/ && cd /tmp/gt && date -u | tee $OUT/cleanup_pytest_gpu.log
timeout 300 python3 -m pytest -q -p no:cacheprovider -rs tests/test_gpu.py 2>&1 | tail -12 | tee -a $OUT/cleanup_pytest_gpu.log
