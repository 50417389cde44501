#!/usr/bin/env bash
# Eighth session, first command (prepared at the end of the seventh as session7/next_run_a.sh), on the
# two-H200 machine, about 10 minutes; nothing hostile runs beside the timings:
#  GPU 0: llm_layers at 16 picks with the transposed epilogue fixed after the seventh session's runs
#         (same settings as run_b.sh: benchmarks/device_common.sh's shortlist_sweep);
#  GPU 1: the hopper coverage check (correctness of the fixed epilogue on every shape; ~3 minutes),
#         then grid125's run_b winners at sustained clocks: evo bench kernels_of=... with 5 replays of
#         100 ms and one draw per kernel (~6 minutes; the MHz column is the SM clock during each row).
#   OUT=/some/folder bash benchmarks/session7/next_run_a.sh
. benchmarks/device_common.sh
device_setup
export PYTHONSAFEPATH=1
shortlist_sweep 0 llm_layers 16 560 &
A=$!
(
  export CUDA_VISIBLE_DEVICES=1 EVO_CACHE_DIR=/tmp/evo-cache1
  mkdir -p /tmp/w1 && cd /tmp && date -u
  timeout -s INT 240 python3 "$REPO/benchmarks/seeds/coverage_check.py" /tmp/coverage hopper 2>&1 | tail -8
  date -u
  timeout -s INT 330 python3 -m evo bench kernels_of="$REPO/benchmarks/session7/run_b/grid125.sqlite.gz" \
    evaluator.replays=5 evaluator.target_replay_ms=100 evaluator.draws=1 search.progress=false \
    archive.path=/tmp/w1/sustained_grid125.sqlite 2>&1 | tail -140
  date -u
) > "$OUT/coverage_and_sustained.log" 2>&1 &
B=$!
wait $A $B
device_done
