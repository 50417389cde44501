#!/usr/bin/env bash
# Session 30's first GPU command (one GPU, <= 10 minutes; written for the next session, not yet run):
# overlap_probe.py (does a library gain from following itself in the evaluator's back-to-back graphs? cut at
# 120 s), mode_probe6.py (does a worker's kernel timing drift away from its library timing as it works? cut
# at 150 s), then session 29's profile_small.sh on two small shapes that cuBLASLt wins (cut at 220 s).
# Into $OUT/overlap.txt, $OUT/probe6.txt and $OUT/prof29.tgz.
#   OUT=/some/folder bash benchmarks/session30/run1.sh
# With less device time left, choose the parts and their sizes, e.g. ~7 minutes:
#   PARTS="probe profile" PROBE_S=170 PROFILE_SHAPES=4096x256x64 PROFILE_S=200 bash benchmarks/session30/run1.sh
# or ~4 minutes: PARTS=probe PROBE_LOAD=20 bash benchmarks/session30/run1.sh
set -uo pipefail
export OUT=${OUT:?}
PARTS=${PARTS:-"overlap probe profile"}
PROBE_S=${PROBE_S:-150} PROBE_LOAD=${PROBE_LOAD:-30}
PROFILE_S=${PROFILE_S:-220} PROFILE_SHAPES=${PROFILE_SHAPES:-"4096x256x64 256x256x16384"}
. benchmarks/device_common.sh
device_setup > /dev/null
gunzip -c benchmarks/session28/grid125/grid125.sqlite.gz > /tmp/g28.sqlite

# run_script SECONDS OUTFILE SCRIPT ARGS...: a session30 script from /tmp on the sweep archive, cut at SECONDS
run_script() {
  local seconds=$1 out=$2 script=$3; shift 3
  (cd /tmp && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout "$seconds" python3 \
    "$REPO/benchmarks/session30/$script" /tmp/g28.sqlite "$@") > "$out" 2>&1
  echo "$script rc=$?"; grep -v Warning "$out" | tail -34
}
for part in $PARTS; do
  case $part in
    overlap) run_script 120 "$OUT/overlap.txt" overlap_probe.py ;;
    probe) run_script "$PROBE_S" "$OUT/probe6.txt" mode_probe6.py --load "$PROBE_LOAD" --busy 16 ;;
    profile)
      SHAPES="$PROFILE_SHAPES" timeout "$PROFILE_S" bash benchmarks/session29/profile_small.sh > "$OUT/prof.log" 2>&1
      echo "profile rc=$?"; tail -40 "$OUT/prof.log"
      [ -f "$OUT/prof29.tgz" ] || tar -czf "$OUT/prof29.tgz" -C /tmp prof29 ;;  # cut short: what it had
    *) echo "unknown part $part (overlap, probe, profile)"; exit 2 ;;
  esac
done
