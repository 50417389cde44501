#!/usr/bin/env bash
# Seventh session, first command, on the two-H200 machine (about 9 minutes):
#  GPU 0: llm_layers shortlist sweep with the transposed-product picks (SWAP_AB), same settings as
#         benchmarks/session6/run_c.sh (12 picks, 3 replays of 10 ms, 2 draws), libraries in the same run;
#  GPU 1: the coverage check of hopper (1000-shape grid, llm_layers, unaligned shapes; shortlist picks
#         plus EXTRA, which now holds transposed products and tail splits on every shape).
# (Restated over benchmarks/device_common.sh after the run: the same commands.)
#   OUT=/some/folder bash benchmarks/session7/run_a.sh
. benchmarks/device_common.sh
device_setup
export PYTHONSAFEPATH=1
shortlist_sweep 0 llm_layers 12 500 &
A=$!
(
  export CUDA_VISIBLE_DEVICES=1 EVO_CACHE_DIR=/tmp/evo-cache1
  cd /tmp && date -u
  timeout -s INT 480 python3 "$REPO/benchmarks/seeds/coverage_check.py" /tmp/coverage hopper 2>&1 | tail -40
  date -u
  gzip -c /tmp/coverage/*.csv > "$OUT/coverage_hopper.csv.gz" 2>/dev/null; ls /tmp/coverage
) > "$OUT/coverage.log" 2>&1 &
B=$!
wait $A $B
device_done
