#!/usr/bin/env bash
# The last GPU command of 2026-11-30 (two-H200 machine): the dispatch check after the eager-path
# work (GPU 0), then sweep throughput one GPU vs two. evo from its wheel in .whl.
set -u -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH EVO_CACHE_DIR=/tmp/evo-cache PYTHONUNBUFFERED=1
ROOT=$OUT; mkdir -p $ROOT/dispatch $ROOT/cluster
nvidia-smi --query-gpu=index,name,clocks.sm,temperature.gpu --format=csv | tee $ROOT/gpus.txt
OUT=$ROOT/dispatch bash benchmarks/dispatch/lead_session.sh > $ROOT/dispatch/session.log 2>&1; tail -40 $ROOT/dispatch/session.log
REPO=$PWD OUT=$ROOT/cluster bash benchmarks/cluster/throughput_lead.sh
