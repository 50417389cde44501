#!/usr/bin/env bash
# For the next GPU session (session21/NEXT.md item 2), one H200, ~5-7 minutes a set: a set's sweep winners
# timed again beside the libraries, one draw each (`evo bench kernels_of=`), so that the ratio is not the
# best of 24 kernel draws against one library draw (session21/README.md section 3). Per set: the bench's
# table, and compare_sets.py with the sweep as OLD and the bench as NEW (ratio per shape both ways).
# SETS names the sets (default "grid125 llm_layers"); SWEEPS the folder holding <set>/<set>.sqlite.xz,
# <set>.sqlite.gz (as next_sets.sh leaves in its OUT) or <set>.sqlite (default benchmarks/session21);
# CUT the seconds each bench may take (default 420).
# Into $OUT/retime.tgz. BACKEND=simulated runs it on the CPU (a dry run: modelled times).
#   OUT=/some/folder bash benchmarks/session21/next_retime_sets.sh
#   OUT=/some/folder SETS=llm_layers SWEEPS=/path/with/new/sweeps bash benchmarks/session21/next_retime_sets.sh
set -uo pipefail
OUT=${OUT:?}
BACKEND=${BACKEND:-gpu}
if [ "$BACKEND" = gpu ]; then . benchmarks/device_common.sh; device_setup; fi
REPO=$PWD
R=/tmp/retime && rm -rf $R && mkdir -p $R
for set in ${SETS:-grid125 llm_layers}; do
  S=${SWEEPS:-benchmarks/session21}
  if [ -f "$S/$set/$set.sqlite.xz" ]; then xz -dc "$S/$set/$set.sqlite.xz" > $R/${set}_sweep.sqlite
  elif [ -f "$S/$set.sqlite.gz" ]; then gunzip -c "$S/$set.sqlite.gz" > $R/${set}_sweep.sqlite
  elif [ -f "$S/$set.sqlite" ]; then cp "$S/$set.sqlite" $R/${set}_sweep.sqlite
  else echo "no sweep archive of $set in $S ($set/$set.sqlite.xz, $set.sqlite.gz or $set.sqlite)"; exit 2; fi
  (cd $R && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout -s INT "${CUT:-420}" python3 -m evo bench \
    evaluator=$([ "$BACKEND" = gpu ] && echo gpu || echo simulated) "kernels_of=$R/${set}_sweep.sqlite" \
    shapes=$set evaluator.replays=3 evaluator.target_replay_ms=10 search.progress=false \
    archive.path=$R/${set}_bench.sqlite) > $R/${set}_bench.log 2>&1
  tail -4 $R/${set}_bench.log
  { [ "$BACKEND" = gpu ] || echo "SIMULATED (the CPU test double's modelled times, not measurements)"
    python3 "$REPO/benchmarks/session21/compare_sets.py" $R/${set}_sweep.sqlite $R/${set}_bench.sqlite --worst 20
  } | tee $R/${set}_compare.txt
done
if [ "$BACKEND" = gpu ]; then device_done; cp "$OUT/gpu.txt" $R/; fi
rm -f $R/*_sweep.sqlite && xz -9 $R/*.sqlite; tar -czf "$OUT/retime.tgz" -C /tmp retime
