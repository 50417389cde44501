#!/usr/bin/env bash
# The last GPU session's command (run on the H200 machine through the device tool; wheels in .whl).
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export EVO_CACHE_DIR=/tmp/evo-cache PYTHONUNBUFFERED=1
date -u
(timeout 120 python3 -m evo sweep family=hopper shapes=inline 'shapes.list=[8192x8192x8192]' sweep.sample=shortlist sweep.budget=4 evaluator.draws=2 evaluator.replays=5 evaluator.target_replay_ms=20 'evaluator.modes=[rotating,hot,server]' archive.path=$OUT/big.sqlite search.progress=false 2>&1 | tee $OUT/big.log; python3 -m evo archive elites $OUT/big.sqlite | tee -a $OUT/big.log)
date -u
(timeout 90 python3 -m evo bench shapes=smoke 'evaluator.modes=[rotating,server]' evaluator.replays=5 evaluator.target_replay_ms=5 archive.path=$OUT/server.sqlite 2>&1 | tee $OUT/server.log)
date -u
(timeout 240 python3 -m evo sweep family=hopper shapes=inline 'shapes.list=[77x4096x4096,1024x1024x4096]' sweep.sample=random sweep.budget=40 search.seed=1 evaluator.draws=1 evaluator.replays=5 evaluator.target_replay_ms=5 evaluator.timeout_s=15 archive.path=$OUT/gap.sqlite search.progress=false 2>&1 | tee $OUT/gap.log)
date -u
