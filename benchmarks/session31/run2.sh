#!/usr/bin/env bash
# Session 31's second GPU command (one GPU, ~8 minutes): mode_trigger.py twice, jobs as PDL launches and plainly
# (which job puts a worker into the slow launch mode; each cut at TRIGGER_S), then session30/stages_ab.py on session 28's two sweeps (cut by its
# own --budget-s). Into $OUT/trigger_pdl1.txt, $OUT/trigger_pdl0.txt and $OUT/stages.tgz.
#   OUT=/some/folder bash benchmarks/session31/run2.sh
set -uo pipefail
export OUT=${OUT:?}
TRIGGER_S=${TRIGGER_S:-150} TRIGGER_STEPS=${TRIGGER_STEPS:-24} STAGES_S=${STAGES_S:-150}
. benchmarks/device_common.sh
device_setup > /dev/null
gunzip -c benchmarks/session28/grid125/grid125.sqlite.gz > /tmp/g28.sqlite
gunzip -c benchmarks/session28/llm_layers/llm_layers.sqlite.gz > /tmp/l28.sqlite
for pdl in 1 0; do  # the jobs as PDL launches (sweeps of sessions 18-30), then plainly (the default now)
  (cd /tmp && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout "$TRIGGER_S" python3 \
    "$REPO/benchmarks/session31/mode_trigger.py" /tmp/g28.sqlite --steps "$TRIGGER_STEPS" --pdl $pdl) \
    > "$OUT/trigger_pdl$pdl.txt" 2>&1
  echo "mode_trigger --pdl $pdl rc=$?"; grep -v Warning "$OUT/trigger_pdl$pdl.txt" | tail -30
done
if [ "$STAGES_S" -gt 0 ]; then  # STAGES_S=0: the trigger probes alone
  mkdir -p /tmp/stages
  (cd /tmp && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout $((STAGES_S + 90)) python3 \
    "$REPO/benchmarks/session30/stages_ab.py" /tmp/g28.sqlite /tmp/l28.sqlite --out /tmp/stages \
    --budget-s "$STAGES_S") > /tmp/stages/log.txt 2>&1 || true
  echo "stages_ab done"; tail -30 /tmp/stages/log.txt
  tar -czf "$OUT/stages.tgz" -C /tmp stages
fi
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader
