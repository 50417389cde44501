#!/usr/bin/env bash
# Session 18 had 247 s of device time left (the rest of the allowance went to the interrupted session 17):
# a cut-down of session17/next_pdl_ab.sh. The 16 grid125 shapes under 3 GFLOP where session 16's sweep
# winner lost most to the best library (pdl16.sqlite.gz: grid125.sqlite.gz with only those 16 elites),
# timed by `evo bench kernels_of=...` three times: plain / evaluator.pdl=true / plain, libraries timed again
# in each run (runs 1 and 3 give the a/a spread). Each run's correctness checks cover the PDL launches.
#   OUT=/some/folder bash benchmarks/session18/pdl_mini.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/pdl && mkdir -p $R
ARCH=$REPO/benchmarks/session18/pdl16.sqlite.gz
for run in 1:false:70 2:true:45 3:false:45; do
  IFS=: read -r n pdl secs <<< "$run"
  (cd /tmp && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout -s INT $secs python3 -m evo bench \
     kernels_of=$ARCH evaluator.pdl=$pdl evaluator.replays=5 evaluator.target_replay_ms=10 evaluator.draws=1 \
     search.progress=false archive.path=$R/bench$n.sqlite > "$OUT/bench$n.log" 2>&1)
  echo "run $n (pdl=$pdl) rc=$?: $(tail -1 "$OUT/bench$n.log")"
done
device_done
xz -9 $R/*.sqlite; tar -czf "$OUT/pdl_mini.tgz" -C /tmp pdl
