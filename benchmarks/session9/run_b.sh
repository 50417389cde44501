#!/usr/bin/env bash
# Ninth session, second command, on the two-H200 machine (~9.5 minutes):
#  GPU 0: llm_layers at 24 shortlist picks with stream-K on the shortlist (29 of its 87 shapes get a
#         stream-K pick among their first 24 hopper picks), to set against the eighth session's run_c;
#  GPU 1: evo compare at 24 evaluations per shape on the 14 shapes of compare_gpu.sh, one seed:
#         search, shortlist and the uniform-policy search (the search's mutations changed at the end of
#         the eighth session; REINFORCE against uniform).
#   OUT=/some/folder bash benchmarks/session9/run_b.sh
. benchmarks/device_common.sh
device_setup
shortlist_sweep 0 llm_layers 24 520 &
A=$!
(
  export CUDA_VISIBLE_DEVICES=1 EVO_CACHE_DIR=/tmp/evo-cache1
  BUDGET=24 SEEDS=1 ARMS='[search,shortlist,uniform]' LIMIT_S=460 OUT=/tmp/c1 bash benchmarks/search/compare_gpu.sh
  tar czf "$OUT/compare24.tgz" -C /tmp/c1 .
) > "$OUT/compare24_gpu1.log" 2>&1 &
B=$!
wait $A $B
device_done
