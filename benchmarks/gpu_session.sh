#!/usr/bin/env bash
# The last GPU session's command (run on the H200 machine through the device tool; wheels in .whl).
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export EVO_CACHE_DIR=/tmp/evo-cache PYTHONUNBUFFERED=1
date -u
K=benchmarks/seeds/multicast
(timeout 200 python3 -m evo bench shapes=inline 'shapes.list=[8192x8192x8192,4096x4096x4096]' "kernels=[$K/plain_persistent.cu,$K/pair_persistent.cu,$K/pair_no_multicast.cu,$K/pair_plain_arrive.cu,$K/plain_in_clusters_of_2.cu]" evaluator.draws=1 evaluator.replays=5 evaluator.target_replay_ms=5 evaluator.timeout_s=20 'evaluator.libraries=[torch]' archive.path=$OUT/diag2.sqlite search.progress=false 2>&1 | tee $OUT/multicast_diag2.log)
date -u
