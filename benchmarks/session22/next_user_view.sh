#!/usr/bin/env bash
# For the next GPU session (session22/NEXT.md item 3), one H200, ~4-6 minutes: a sweep's winners as a user
# runs them. `evo export ARCHIVE --verify` compiles the winners, builds torch.ops.evo.matmul and, in this
# plain process (no evo worker), times every range whose recorded speedup over torch passed, beside
# torch.matmul; verify_summary.py compares that with the sweep's recorded speedup at each won shape.
# SWEEP: the archive (.sqlite, .sqlite.xz or .sqlite.gz; default session 22's grid125 sweep). CUT: the
# export's time limit in seconds (default 480). Into $OUT/user_view.tgz.
# BACKEND=simulated: a CPU dry run (export without cubins or re-check; the summary says nothing was re-checked).
#   OUT=/some/folder bash benchmarks/session22/next_user_view.sh
#   OUT=/some/folder SWEEP=/path/grid125.sqlite.gz bash benchmarks/session22/next_user_view.sh
set -uo pipefail
OUT=${OUT:?}
BACKEND=${BACKEND:-gpu}
REPO=$PWD
SWEEP=${SWEEP:-benchmarks/session22/grid125/grid125.sqlite.xz}
if [ "$BACKEND" = gpu ]; then . benchmarks/device_common.sh; device_setup; fi
R=/tmp/user_view && rm -rf $R && mkdir -p $R
case "$SWEEP" in
  *.xz) xz -dc "$SWEEP" > $R/sweep.sqlite ;;
  *.gz) gunzip -c "$SWEEP" > $R/sweep.sqlite ;;
  *) cp "$SWEEP" $R/sweep.sqlite ;;
esac
if [ "$BACKEND" = gpu ]; then ARGS=(--verify); else ARGS=(--no-cubins); fi
(cd $R && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout "${CUT:-480}" python3 -m evo export $R/sweep.sqlite \
  --out $R/exp "${ARGS[@]}") > $R/export.log 2>&1
tail -5 $R/export.log
{ [ "$BACKEND" = gpu ] || echo "SIMULATED (the CPU test double's modelled times, not measurements)"
  python3 "$REPO/benchmarks/session22/verify_summary.py" $R/exp/manifest.json
} | tee $R/summary.txt
if [ "$BACKEND" = gpu ]; then device_done; cp "$OUT/gpu.txt" $R/; fi
rm -f $R/sweep.sqlite $R/exp/*.cubin
tar -czf "$OUT/user_view.tgz" -C /tmp user_view
