#!/usr/bin/env bash
# Where the time of one evaluation goes in `evo run +experiment=quick` (issue 14), on one GPU, then
# the evaluations per second of quick_throughput.sh. About 4.5 minutes of GPU time:
#   1. a profiled quick run (PROFILE_S, default 50 s) with EVO_PROFILE_SYNC=1: every step waits for
#      the GPU, so each is charged its own GPU time (slower than a plain run; the shares are what count);
#   2. a profiled quick run without the per-step waits (PROFILE_S): the real per-evaluation totals;
#   3. quick_throughput.sh (cold and warm runs, each cut at QUICK_S, default 80 s).
# Expects evo installed (PYTHONPATH) and OUT set; REPO: the checkout (default: here).
set -u -o pipefail
REPO=${REPO:-$PWD}
PROFILE_S=${PROFILE_S:-50}
export QUICK_S=${QUICK_S:-80}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.max.sm,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
if [ "${SELFTEST:-0}" = 1 ]; then  # the sealed checks still catch every deliberately bad kernel (extra GPU time)
  echo "== $(date -u +%H:%M:%S) evo selftest"; timeout 300 evo selftest 'evaluator.gpus=[0]' 2>&1 | tee "$OUT/selftest.log"
fi
for kind in synced plain; do
  rm -f /tmp/profile_$kind.sqlite "$OUT/profile_$kind.jsonl"
  echo "== $(date -u +%H:%M:%S) profiled quick run ($kind, ${PROFILE_S} s)"
  sync_flag=$([ $kind = synced ] && echo 1 || echo 0)
  EVO_PROFILE="$OUT/profile_$kind.jsonl" EVO_PROFILE_SYNC=$sync_flag EVO_CACHE_DIR=/tmp/evo_profile_cache \
    timeout "$PROFILE_S" evo run +experiment=quick llm=none 'evaluator.gpus=[0]' search.progress=false \
    archive.path=/tmp/profile_$kind.sqlite > "$OUT/profile_$kind.log" 2>&1
  echo "exit $?"
  python3 "$REPO/benchmarks/search/throughput_profile.py" "$OUT/profile_$kind.jsonl" | tee "$OUT/profile_$kind.txt"
done
echo "== $(date -u +%H:%M:%S) quick_throughput.sh (QUICK_S=$QUICK_S)"
bash "$REPO/benchmarks/search/quick_throughput.sh"
echo "== $(date -u +%H:%M:%S) done"
