#!/usr/bin/env bash
# The last GPU session's command (run on the H200 machine through the device tool; wheels in .whl).
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export EVO_CACHE_DIR=/tmp/evo-cache PYTHONUNBUFFERED=1
date -u
(timeout 70 python3 -m pytest -m gpu -q -x -k "hopper or simt" tests/test_gpu.py 2>&1 | tail -5 | tee $OUT/pytest_gpu.log)
date -u
(timeout 270 python3 -m evo sweep shapes=grid125 sweep.sample=shortlist sweep.budget=15 evaluator.draws=2 evaluator.replays=5 evaluator.target_replay_ms=5 archive.path=$OUT/sweep.sqlite search.progress=false 2>&1 | tee $OUT/sweep.log)
date -u
(timeout 170 python3 benchmarks/search/search_vs_random.py $OUT/svr 12 2>&1 | grep -v "^sweep \[\|^bench \[" | tee $OUT/search_vs_random.log)
date -u
(timeout 60 sh -c "python3 -m evo export $OUT/svr/search.sqlite --out $OUT/exported && python3 benchmarks/export/export_check.py $OUT/exported" 2>&1 | tee $OUT/export_check.log)
date -u
# at most 8 files come back: bundle the rest
cd $OUT && tar czf extra.tgz exported svr/summary.json && rm -rf exported svr/summary.json; ls -la $OUT $OUT/svr
