#!/usr/bin/env bash
# For the next GPU session (NEXT.md item 1), one H200, ~9 minutes (timeouts add up to 520 s): the GPU tests of
# this session's two changes, then grid125's per-shape winners (session16's sweep) timed by `evo bench
# kernels_of=...` three times, plain / evaluator.pdl=true / plain, libraries timed again in each run (so runs
# 1 and 3 are the a/a spread). What it answers: does evo lose the few-microsecond shapes to the libraries
# partly because its kernels are timed without programmatic dependent launch? Compare per shape the
# kernel's ratio to the best library across the three archives (`evo archive elites ARCHIVE`).
#   OUT=/some/folder bash benchmarks/session17/next_pdl_ab.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/pdl && mkdir -p $R
gpu_tests $R/pytest_gpu.txt 100 -m gpu gt/test_gpu.py -k "library_baselines or measured_peaks or programmatic_dependent"
cat $R/pytest_gpu.txt
ARCH=benchmarks/session16/grid125/grid125.sqlite.gz
RUNS="1:false 2:true 3:false"
if ! grep -q " passed" $R/pytest_gpu.txt || grep -q -E "failed|error" $R/pytest_gpu.txt; then
  echo "the GPU tests did not all pass: no A/B (it would time broken launches)"; RUNS=""
fi
for run in $RUNS; do
  n=${run%%:*}; pdl=${run##*:}
  (cd /tmp && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout -s INT 140 python3 -m evo bench \
     kernels_of=$REPO/$ARCH evaluator.pdl=$pdl evaluator.replays=5 evaluator.target_replay_ms=10 evaluator.draws=1 \
     search.progress=false archive.path=$R/bench$n.sqlite > $R/bench$n.log 2>&1)
  echo "run $n (pdl=$pdl): $(grep -c . $R/bench$n.log) lines"; tail -3 $R/bench$n.log
done
device_done
cp "$OUT/gpu.txt" $R/ && xz -9 $R/*.sqlite; tar -czf "$OUT/pdl_ab.tgz" -C /tmp pdl
