#!/usr/bin/env bash
# Sixth session, second command, on the two-H200 machine (about 8 minutes):
#  GPU 0: tail_ab.py (the same hopper tiles with TAIL_SPLIT 1/2/4/16 on 8 shapes, libraries beside), then
#         the quick preset's evaluations per second with main's evaluator (quick_throughput.sh);
#  GPU 1: the `tput` branch's evaluator (sealed timing without a host wait per chunk): evo selftest,
#         then its throughput_profile.sh (profiled quick runs and quick_throughput.sh).
# .whl/ carried, with .whl/tput/ holding the tput wheel and its benchmarks (src.tar).
#   OUT=/some/folder bash benchmarks/session6/run_b.sh
set -uo pipefail
OUT=${OUT:?}
REPO=$PWD
q() { nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader; }
{ date -u; q; } | tee "$OUT/gpu.txt"
(
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site0 .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site0 PATH=/tmp/site0/bin:$PATH EVO_CACHE_DIR=/tmp/evo-cache0 PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=0
  mkdir -p /tmp/w0 && cd /tmp/w0
  date -u; timeout 200 python3 $REPO/benchmarks/session6/tail_ab.py /tmp/w0/tail_ab.sqlite evaluator.replays=3 \
    evaluator.target_replay_ms=10 evaluator.draws=2 > "$OUT/tail_ab.txt" 2>&1; echo "tail_ab exit $?"
  gzip -c /tmp/w0/tail_ab.sqlite > "$OUT/tail_ab.sqlite.gz"
  date -u; mkdir -p /tmp/o0 && OUT=/tmp/o0 QUICK_S=80 bash $REPO/benchmarks/search/quick_throughput.sh
  cp /tmp/o0/quick_throughput.txt "$OUT/main_quick_throughput.txt"; date -u
) > "$OUT/gpu0.log" 2>&1 &
A=$!
(
  mkdir -p /tmp/tput && tar -xf .whl/tput/src.tar -C /tmp/tput
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site1 \
    $(ls .whl/*.whl | grep -v evo_hgemm) .whl/tput/*.whl || exit 1
  export PYTHONPATH=/tmp/site1 PATH=/tmp/site1/bin:$PATH EVO_CACHE_DIR=/tmp/evo-cache1 PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=1
  python3 -c "import evo.evaluation.sealed, evo; print('tput evo at', evo.__file__)"
  mkdir -p /tmp/w1 && cd /tmp/w1 && mkdir -p /tmp/o1
  OUT=/tmp/o1 REPO=/tmp/tput SELFTEST=1 PROFILE_S=40 QUICK_S=80 bash /tmp/tput/benchmarks/search/throughput_profile.sh
  cd /tmp/o1 && tar czf "$OUT/tput_out.tgz" .
) > "$OUT/gpu1.log" 2>&1 &
B=$!
wait $A $B
{ date -u; q; } | tee -a "$OUT/gpu.txt"
ls -la "$OUT"
