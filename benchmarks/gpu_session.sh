#!/usr/bin/env bash
# The last GPU session's command (run on the H200 machine through the device tool; wheels in .whl).
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD || exit
export EVO_CACHE_DIR=/tmp/evo-cache PYTHONUNBUFFERED=1
date -u
(timeout 420 sh -c "python3 -m evo export benchmarks/archives/sweep_shortlist_grid125_h200_v5.sqlite --out $OUT/exported && python3 benchmarks/export/export_check.py $OUT/exported" 2>&1 | tee $OUT/export_check_grid125.log)
date -u
cp $OUT/exported/manifest.json $OUT/manifest_grid125.json; rm -rf $OUT/exported
