#!/usr/bin/env bash
# The allocator's latency floor (latency_floor.patch) on the SIMULATED evaluator (a CPU test double:
# modelled times, not measurements): the quick preset, seeds 1-3, without and with the patch.
#   rm -rf /tmp/before_tree /tmp/after_tree && mkdir /tmp/before_tree /tmp/after_tree
#   git archive HEAD | tar -x -C /tmp/before_tree && git archive HEAD | tar -x -C /tmp/after_tree
#   (cd /tmp/after_tree && patch -p1 < .../benchmarks/session12/latency_floor.patch)
#   bash benchmarks/session12/latency_floor_simulated.sh before /tmp/before_tree
#   bash benchmarks/session12/latency_floor_simulated.sh after /tmp/after_tree
# then the table: latency_floor_simulated.txt (per shape: mean evaluations and best speedup over seeds).
cd /tmp
for s in 1 2 3; do
  rm -f /tmp/simq_$1_$s.sqlite*
  PYTHONPATH=$2 python3 -m evo run +experiment=quick llm=none evaluator=simulated search.progress=false search.seed=$s \
    archive.path=/tmp/simq_$1_$s.sqlite > /tmp/simq_$1_$s.log 2>&1
done
