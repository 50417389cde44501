#!/usr/bin/env bash
# Seventh session, fourth and fifth commands, on the two-H200 machine (both GPUs serve each arm):
# evo compare, search vs shortlist at 24 evaluations per shape on compare_gpu.sh's 14 shapes, then the
# second seed and the uniform-policy arm, continuing from the first command's archives.
#   OUT=/some/folder bash benchmarks/session7/run_d.sh first     # ~2 minutes
#   (copy the first command's compare24/ into benchmarks/search/compare24_h200/ in the tree, or carry
#    it as a tarball and unpack it there, as this session did)
#   OUT=/some/folder bash benchmarks/session7/run_d.sh second    # ~3 minutes
set -uo pipefail
OUT=${OUT:?}
python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
SETTINGS="evaluator.replays=3 evaluator.target_replay_ms=10 evaluator.draws=2"
mkdir -p /tmp/o1
case "${1:?first or second}" in
  first)  OUT=/tmp/o1 BUDGET=24 SEEDS=1 ARMS='[search,shortlist]' LIMIT_S=330 EXTRA="$SETTINGS" \
            bash benchmarks/search/compare_gpu.sh > "$OUT/compare_first_seed.log" 2>&1 ;;
  second) OUT=/tmp/o1 BUDGET=24 SEEDS=2 ARMS='[search,shortlist,uniform]' LIMIT_S=200 EXTRA="$SETTINGS" \
            bash benchmarks/search/compare_gpu.sh > "$OUT/compare.log" 2>&1 ;;
esac
cp /tmp/o1/compare24.log "$OUT/" 2>/dev/null
tar czf "$OUT/compare24_archives.tgz" -C /tmp/o1 compare24 compare24.run.log
