#!/usr/bin/env bash
# Session 28's plan for the next GPU command (~9 minutes, one GPU): the hopper variants' GPU correctness test
# (with the new multicast pairs doing split-K over L2), then splitk_pair_ab.py on session 28's grid125 and
# llm_layers sweep archives (the pairs against the same kernels unpaired, the winners and the libraries, one
# run), then `evo selftest` in the time left of TOTAL_S (default 560). Into $OUT/skpair.tgz.
#   OUT=/some/folder bash benchmarks/session28/splitk_pair_run.sh
# BACKEND=simulated: the plumbing on the CPU test double (modelled times; evo from the current environment).
set -uo pipefail
START=$(date +%s)
BACKEND=${BACKEND:-gpu}
. benchmarks/device_common.sh
if [ "$BACKEND" = gpu ]; then device_setup; else echo "SIMULATED: modelled times" > "$OUT/gpu.txt"; fi
# the evo installed must be one that takes pairs with split-K (a wheel built before session 28's change refuses them)
(cd /tmp && python3 -c "from evo.families import FAMILIES as F; h = F['hopper']; \
assert h.problem(dict(h.default, CLUSTER_M=2, SPLIT_K=8, BM=64, BN=64, CONSUMERS=1, STAGES=7)) is None, \
'the installed evo predates split-K pairs: rebuild .whl/evo_hgemm-*.whl from the working tree'") || exit 1
R=/tmp/skpair && rm -rf $R && mkdir -p $R
if [ "$BACKEND" = gpu ]; then
  gpu_tests $R/pytest_variants.txt 200 -m gpu -rfEs gt/test_gpu.py -k hopper_variants > /dev/null
  grep -E "passed|failed|FAILED|ERROR" $R/pytest_variants.txt | tail -8; cp $R/pytest_variants.txt "$OUT/"
fi
for s in grid125 llm_layers; do gunzip -c benchmarks/session28/$s/$s.sqlite.gz > $R/${s}28.sqlite; done
TOTAL_S=${TOTAL_S:-560}
LEFT=$((TOTAL_S - ($(date +%s) - START) - 60))  # the A/B's own cut, kept inside the command's limit
(cd /tmp && timeout "$LEFT" python3 "$REPO/benchmarks/session28/splitk_pair_ab.py" $R/grid12528.sqlite \
  $R/llm_layers28.sqlite --out $R/ab --budget-s "${AB_S:-240}" --backend "$BACKEND") > $R/ab.log 2>&1
cp $R/ab.log "$OUT/"  # back even if what follows is cut
grep -v "^  " $R/ab.log | tail -60; grep -c "^  " $R/ab.log
LEFT=$((TOTAL_S - ($(date +%s) - START) - 30))
if [ "$BACKEND" = gpu ] && [ "$LEFT" -gt 60 ]; then
  (cd /tmp && timeout "$LEFT" python3 -m evo selftest) > $R/selftest.txt 2>&1; echo "selftest rc=$?" >> $R/selftest.txt
  tail -25 $R/selftest.txt
fi
rm -f $R/grid12528.sqlite $R/llm_layers28.sqlite; [ -f $R/ab/skpair.sqlite ] && gzip -f $R/ab/skpair.sqlite
[ "$BACKEND" = gpu ] && device_done; cp "$OUT/gpu.txt" $R/
tar -czf "$OUT/skpair.tgz" -C /tmp skpair
