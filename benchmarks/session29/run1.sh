#!/usr/bin/env bash
# Session 29's first GPU command (~9 minutes, one GPU), into $OUT/s29.tgz (logs also copied as written):
#  1. the hopper variants' GPU correctness test (session 28's split-K multicast pairs among them);
#  2. session28/splitk_pair_ab.py on session 28's sweeps (split-K picks against themselves as pairs), cut at AB_S;
#  3. narrow_ab.py on the same sweeps (transposed 32/48-row tiles above M = 64), cut at NARROW_S;
#  4. `evo selftest` in what is left of TOTAL_S (default 560).
#   OUT=/some/folder bash benchmarks/session29/run1.sh      BACKEND=simulated: the plumbing on the CPU double
set -uo pipefail
START=$(date +%s)
BACKEND=${BACKEND:-gpu}
. benchmarks/device_common.sh
if [ "$BACKEND" = gpu ]; then device_setup; else echo "SIMULATED: modelled times" > "$OUT/gpu.txt"; fi
(cd /tmp && python3 -c "from evo.families import FAMILIES as F; h = F['hopper']; \
assert h.problem(dict(h.default, CLUSTER_M=2, SPLIT_K=8, BM=64, BN=64, CONSUMERS=1, STAGES=7)) is None, \
'the installed evo predates split-K pairs: rebuild .whl/evo_hgemm-*.whl from the working tree'") || exit 1
R=/tmp/s29 && rm -rf $R && mkdir -p $R
if [ "$BACKEND" = gpu ]; then
  gpu_tests $R/pytest_variants.txt 150 -m gpu -rfEs gt/test_gpu.py -k hopper_variants > /dev/null
  grep -E "passed|failed|FAILED|ERROR" $R/pytest_variants.txt | tail -8; cp $R/pytest_variants.txt "$OUT/"
fi
for s in grid125 llm_layers; do gunzip -c benchmarks/session28/$s/$s.sqlite.gz > $R/${s}28.sqlite; done
SWEEPS="$R/grid12528.sqlite $R/llm_layers28.sqlite"
(cd /tmp && timeout $((${AB_S:-150} + 40)) python3 "$REPO/benchmarks/session28/splitk_pair_ab.py" $SWEEPS \
  --out $R/skpair --budget-s "${AB_S:-150}" --backend "$BACKEND") > $R/skpair.log 2>&1
cp $R/skpair.log "$OUT/"; grep -v "^  " $R/skpair.log | tail -45
(cd /tmp && timeout $((${NARROW_S:-150} + 40)) python3 "$REPO/benchmarks/session29/narrow_ab.py" $SWEEPS \
  --out $R/narrow --budget-s "${NARROW_S:-150}" --backend "$BACKEND") > $R/narrow.log 2>&1
cp $R/narrow.log "$OUT/"; grep -v "^  " $R/narrow.log | tail -30
LEFT=$((${TOTAL_S:-560} - ($(date +%s) - START) - 30))
if [ "$BACKEND" = gpu ] && [ "$LEFT" -gt 60 ]; then
  (cd /tmp && timeout "$LEFT" python3 -m evo selftest) > $R/selftest.txt 2>&1; echo "selftest rc=$?" >> $R/selftest.txt
  tail -25 $R/selftest.txt
fi
rm -f $R/grid12528.sqlite $R/llm_layers28.sqlite
for f in $R/skpair/skpair.sqlite $R/narrow/narrow.sqlite; do [ -f "$f" ] && gzip -f "$f"; done
[ "$BACKEND" = gpu ] && device_done; cp "$OUT/gpu.txt" $R/
tar -czf "$OUT/s29.tgz" -C /tmp s29
