#!/usr/bin/env bash
# Evaluations per second per GPU of `evo run +experiment=quick` (issue 14's throughput target: 4/s per
# GPU), on one GPU, structural operators only, default evaluator settings, after a warm-up run that
# fills the compile cache (a second run also measures the cold case: the first). Expects evo installed
# (PYTHONPATH) and OUT set; REPO: the checkout (for throughput.py).
set -u -o pipefail
REPO=${REPO:-$PWD}
runs=()
for name in cold warm; do
  rm -f /tmp/quick_$name.sqlite; echo "== $(date -u +%H:%M:%S) quick $name"
  t0=$(date +%s.%N)
  timeout ${QUICK_S:-150} evo run +experiment=quick llm=none 'evaluator.gpus=[0]' search.progress=false \
    archive.path=/tmp/quick_$name.sqlite > $OUT/quick_$name.log 2>&1
  echo "$name: exit $? after $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s"
  runs+=("quick_$name=/tmp/quick_$name.sqlite:$(python3 -c "print($(date +%s.%N) - $t0)")")
done
python3 $REPO/benchmarks/cluster/throughput.py "${runs[@]}" 2>&1 | tee $OUT/quick_throughput.txt
