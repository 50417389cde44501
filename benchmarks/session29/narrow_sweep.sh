#!/usr/bin/env bash
# NEXT.md item 1 (one GPU, ~2 minutes): the narrow-tile rule (hopper._narrow_beside) as a shortlist, on the
# six grid125 shapes whose 24-pick list it changes: session 28's winner of each shape timed again by
# `evo bench kernels_of=` (libraries first), then `evo sweep` of the new list on the same machine (libraries
# first too), then the sweep's winners timed again the same way as the old ones (a sweep's best of 24 draws
# and its small-shape timing gap would otherwise bias the comparison: docs/timing.md), then
# session21/compare_sets.py old -> new on the two re-timings: each shape's best kernel, best library, ratio.
# Into $OUT/narrow_sweep.tgz.
#   OUT=/some/folder bash benchmarks/session29/narrow_sweep.sh      BACKEND=simulated: the plumbing on the CPU double
set -uo pipefail
BACKEND=${BACKEND:-gpu}
. benchmarks/device_common.sh
if [ "$BACKEND" = gpu ]; then device_setup; else echo "SIMULATED: modelled times" > "$OUT/gpu.txt"; fi
(cd /tmp && python3 -c "from evo.families.hopper import _narrow_beside") || { echo "the installed evo predates the narrow rule: rebuild the wheel"; exit 1; }
R=/tmp/narrow_sweep && rm -rf $R && mkdir -p $R
SHAPES='[256x1024x1024,256x1024x4096,1024x256x1024,1024x256x4096,4096x64x1024,4096x64x4096]'
gunzip -c benchmarks/session28/grid125/grid125.sqlite.gz > $R/grid125_28.sqlite
COMMON=(evaluator=$([ "$BACKEND" = gpu ] && echo gpu || echo simulated) shapes=inline "shapes.list=$SHAPES"
        evaluator.replays=3 evaluator.target_replay_ms=10 evaluator.draws=2 search.progress=false)
(cd $R && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout -s INT 150 python3 -m evo bench \
  "kernels_of=$R/grid125_28.sqlite" "${COMMON[@]}" archive.path=$R/winners28.sqlite) > $R/bench28.log 2>&1
tail -3 $R/bench28.log
(cd $R && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout -s INT 240 python3 -m evo sweep sweep.sample=shortlist \
  sweep.budget=24 "${COMMON[@]}" archive.path=$R/sweep.sqlite) > $R/sweep.log 2>&1
tail -3 $R/sweep.log
python3 -m evo archive elites --params $R/sweep.sqlite > $R/sweep_per_shape.txt 2>&1
(cd $R && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout -s INT 150 python3 -m evo bench \
  "kernels_of=$R/sweep.sqlite" "${COMMON[@]}" archive.path=$R/winners_new.sqlite) > $R/bench_new.log 2>&1
tail -3 $R/bench_new.log
{ [ "$BACKEND" = gpu ] || echo "SIMULATED (the CPU test double's modelled times, not measurements)"
  python3 "$REPO/benchmarks/session21/compare_sets.py" $R/winners28.sqlite $R/winners_new.sqlite --worst 6
} | tee $R/compare.txt
rm -f $R/grid125_28.sqlite
[ "$BACKEND" = gpu ] && device_done; cp "$OUT/gpu.txt" $R/
tar -czf "$OUT/narrow_sweep.tgz" -C /tmp narrow_sweep
