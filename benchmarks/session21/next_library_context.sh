#!/usr/bin/env bash
# For the next GPU session (session21/NEXT.md item 1), one H200, ~5 minutes: why do the libraries' times
# depend on the run they are timed in? library_context.py (one process: torch graphs before and after the
# worker's start-up peaks, the libraries measured as a worker does in the order of the bench that reads
# 256x256x4096 slow, torch's kernels per call under torch.profiler, allocations kept alive), then
# `evo bench` of torch alone on all of grid125 twice, shapes in order and reversed, compared shape by
# shape with each other and with session 21's grid125 sweep (context_compare.py).
# Into $OUT/library_context.tgz.
# BACKEND=simulated runs the benches and the comparison on the CPU (a dry run: modelled times, no
# library_context.py, which needs the GPU).
#   OUT=/some/folder bash benchmarks/session21/next_library_context.sh
set -uo pipefail
OUT=${OUT:?}
BACKEND=${BACKEND:-gpu}
REPO=$PWD
if [ "$BACKEND" = gpu ]; then . benchmarks/device_common.sh; device_setup; fi
R=/tmp/libctx && rm -rf $R && mkdir -p $R
if [ "$BACKEND" = gpu ]; then
  [ -n "${SKIP_CONTEXT:-}" ] || (cd /tmp && timeout 200 python3 "$REPO/benchmarks/session21/library_context.py") > $R/library_context.txt 2>&1
  tail -60 $R/library_context.txt
fi
xz -dc benchmarks/session21/grid125/grid125.sqlite.xz > $R/sweep.sqlite
LIST=$(PYTHONSAFEPATH=1 python3 -c "
import sys; sys.path.insert(0, 'benchmarks/session14')
from deep_ab import shapes_of
s = [str(x) for x in shapes_of('grid125')]
print(','.join(s if sys.argv[1] == 'fwd' else s[::-1]))" fwd)
REV=$(python3 -c "print(','.join('$LIST'.split(',')[::-1]))")
for order in fwd rev; do
  L=$([ $order = fwd ] && echo "$LIST" || echo "$REV")
  (cd $R && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout -s INT 150 python3 -m evo bench \
    evaluator=$([ "$BACKEND" = gpu ] && echo gpu || echo simulated) shapes=inline \
    "shapes.list=[$L]" 'evaluator.libraries=[torch]' evaluator.replays=3 evaluator.target_replay_ms=10 \
    search.progress=false archive.path=$R/bench_$order.sqlite) > $R/bench_$order.log 2>&1
  tail -3 $R/bench_$order.log
done
{ [ "$BACKEND" = gpu ] || echo "SIMULATED (the CPU test double's modelled times, not measurements)"
  python3 benchmarks/session21/context_compare.py sweep=$R/sweep.sqlite fwd=$R/bench_fwd.sqlite rev=$R/bench_rev.sqlite
} | tee $R/context_compare.txt
if [ "$BACKEND" = gpu ]; then device_done; cp "$OUT/gpu.txt" $R/; fi
rm -f $R/sweep.sqlite && xz -9 $R/*.sqlite; tar -czf "$OUT/library_context.tgz" -C /tmp libctx
