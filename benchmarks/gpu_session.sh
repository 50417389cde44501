#!/usr/bin/env bash
# The last GPU session's command (run on the H200 machine through the device tool; wheels in .whl).
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export EVO_CACHE_DIR=/tmp/evo-cache PYTHONUNBUFFERED=1
date -u
(timeout 310 python3 benchmarks/seeds/coverage_check.py $OUT/coverage 2>&1 | tee $OUT/coverage.log)
date -u
(timeout 170 python3 -m evo sweep shapes=llm_layers sweep.sample=shortlist sweep.budget=12 evaluator.draws=2 evaluator.replays=5 evaluator.target_replay_ms=5 evaluator.timeout_s=15 archive.path=$OUT/llm_layers.sqlite search.progress=false 2>&1 | tee $OUT/llm_layers.log)
date -u
(timeout 80 python3 benchmarks/seeds/sass_summary.py benchmarks/archives/sweep_shortlist_grid125_h200_v4.sqlite 2>&1 | tee $OUT/sass_v4.log)
date -u
cd $OUT && gzip coverage/coverage.csv; ls -la $OUT $OUT/coverage
