#!/usr/bin/env bash
# For the next GPU session (session20/NEXT.md item 1): both sets at 24 shortlist picks against the new
# cuBLASLt baseline (autotuned = the fastest planned algorithm under evo's timer), libraries in the same run.
# On a machine with two GPUs (kind nvidia-h200-x2) grid125 (cut at 540 s, as sessions 16, 19, 20) and
# llm_layers (cut at 450 s, as session 19) run at once, one a GPU, ~9.5 minutes; on one GPU, SET names the
# one to run (default grid125). Tables, failures and archives into $OUT/<set>_*.
#   OUT=/some/folder bash benchmarks/session20/next_sets.sh
#   OUT=/some/folder SET=llm_layers bash benchmarks/session20/next_sets.sh
. benchmarks/device_common.sh
device_setup
if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
  shortlist_sweep 0 grid125 24 540 &
  shortlist_sweep 1 llm_layers 24 450 &
  wait
else
  case ${SET:-grid125} in
    grid125) shortlist_sweep 0 grid125 24 540 ;;
    llm_layers) shortlist_sweep 0 llm_layers 24 450 ;;
    *) echo "SET must be grid125 or llm_layers"; exit 2 ;;
  esac
fi
for f in "$OUT"/*_sweep.log; do tail -12 "$f"; done
device_done
