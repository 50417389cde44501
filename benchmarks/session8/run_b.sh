#!/usr/bin/env bash
# Eighth session, second command, on the two-H200 machine (~9 minutes):
#  GPU 0: run_a's llm_layers winners (16 picks, the transposed epilogue fixed) at sustained clocks:
#         evo bench kernels_of=... with 3 replays of 100 ms and one correctness draw per kernel; then
#         evo compare on the 6 llm_layers shapes where run_a's shortlist did worst (search, shortlist
#         and a random sweep of the tensor-core families at 24 evaluations per shape, one seed). These
#         shapes are chosen for being the shortlist's worst: read that comparison as "can the search
#         find what the shortlist misses where it misses", not as an unbiased figure.
#  GPU 1: grid125's seventh-session run_b winners at sustained clocks, the same bench settings.
#   OUT=/some/folder bash benchmarks/session8/run_b.sh
. benchmarks/device_common.sh
device_setup
export PYTHONSAFEPATH=1
sustained() {  # sustained GPU ARCHIVE NAME SECONDS
  (
    export CUDA_VISIBLE_DEVICES=$1 EVO_CACHE_DIR=/tmp/evo-cache$1
    mkdir -p "/tmp/w$1" && cd /tmp && date -u
    timeout -s INT "$4" python3 -m evo bench kernels_of="$REPO/$2" evaluator.replays=3 evaluator.target_replay_ms=100 \
      evaluator.draws=1 search.progress=false archive.path="/tmp/w$1/sustained_$3.sqlite" 2>&1 | tail -150
    date -u
  ) > "$OUT/sustained_$3.log" 2>&1
}
(
  sustained 0 benchmarks/session8/run_a/llm_layers.sqlite.gz llm_layers 280
  export CUDA_VISIBLE_DEVICES=0 EVO_CACHE_DIR=/tmp/evo-cache0
  cd /tmp && date -u
  timeout -s INT 240 python3 -m evo compare shapes=inline \
    'shapes.list=[255x2816x2048,77x4096x14336,16x2816x2048,257x9216x3072,61x4096x2304,33x4096x7168]' llm=none \
    compare.budget=24 compare.seeds=1 'compare.arms=[search,shortlist,random_tc]' compare.out=/tmp/worst6 \
    archive.path=/tmp/worst6/unused.sqlite evaluator.replays=3 evaluator.target_replay_ms=10 evaluator.draws=2 \
    search.progress=false 2>&1 | grep -v "^gen \|sweep \[" | tail -60
  date -u
  tar czf "$OUT/worst6_compare.tgz" -C /tmp worst6
) > "$OUT/gpu0.log" 2>&1 &
A=$!
sustained 1 benchmarks/session7/run_b/grid125.sqlite.gz grid125 520 &
B=$!
wait $A $B
device_done
