#!/usr/bin/env bash
# Sweep throughput on the two-H200 machine, one GPU vs two through Dask vs two through the local
# pool: the same random ampere sweep (7 shapes x ${BUDGET:-24}) after a warm-up run that fills the
# compile cache. Each GPU times its own library baselines once per shape; with the default
# LIBS=[torch] that is one library, not three (x2_lead.sh timed three in an 84-evaluation sweep, where
# they took a large share of the run). Expects evo installed (PYTHONPATH) and OUT set. A spec is
# NAME:OVERRIDES, overrides joined by @ (e.g. dask_q0:evaluator.cluster=local@evaluator.cluster_queue=0).
set -u -o pipefail
REPO=${REPO:-$PWD}
SWEEP="sweep family=ampere shapes=smoke sweep.sample=random sweep.budget=${BUDGET:-24} evaluator.draws=1 evaluator.replays=3
       evaluator.target_replay_ms=5 evaluator.timeout_s=20 search.progress=false evaluator.libraries=${LIBS:-[torch]}"
runs=()
for spec in ${SPECS:-warmup: local_1gpu:evaluator.gpus=[0] dask_2gpu:evaluator.cluster=local local_2gpu:}; do
  name=${spec%%:*}; extra=${spec#*:}; extra=${extra//@/ }; echo "== $(date -u +%H:%M:%S) sweep $name"
  t0=$(date +%s.%N)
  timeout ${SWEEP_S:-80} evo $SWEEP $extra archive.path=$OUT/sweep_$name.sqlite > $OUT/sweep_$name.log 2>&1
  echo "$name: exit $? after $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s" | tee -a $OUT/sweep_walls.txt
  [ "$name" = warmup ] || runs+=("$name=$OUT/sweep_$name.sqlite:$(python3 -c "print($(date +%s.%N) - $t0)")")
done
python3 $REPO/benchmarks/cluster/throughput.py "${runs[@]}" 2>&1 | tee $OUT/throughput.txt
