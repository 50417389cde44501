#!/usr/bin/env bash
# Session 20, one H200, ~2.5 minutes: cuBLASLt "autotuned" screened by evo's own timer (gpu_baselines._fastest)
# instead of nvmath's autotune. The GPU tests of the baselines, then `evo bench` (libraries only) twice, in two
# processes, on six shapes where the autotuned time moved most between sessions 19 and 20: is it now stable
# from run to run, and no slower than the heuristic's pick? Into $OUT/autotune_*.
#   OUT=/some/folder bash benchmarks/session20/run_autotune_check.sh
. benchmarks/device_common.sh
device_setup
gpu_tests "$OUT/autotune_pytest.txt" 80 gt/test_gpu.py -k "baseline or autotuned"
cat "$OUT/autotune_pytest.txt"
for run in 1 2; do
  (mkdir -p /tmp/b$run && cd /tmp/b$run && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout -s INT 45 python3 -m evo bench \
    shapes=inline 'shapes.list=[64x64x256,4096x1024x256,64x256x16384,256x256x4096,64x1024x256,64x256x1024]' \
    evaluator.replays=3 evaluator.target_replay_ms=10 search.progress=false archive.path=/tmp/b$run/bench.sqlite \
    > "$OUT/autotune_bench$run.log" 2>&1
   python3 -c "import sqlite3,sys; [print(*r, sep='|') for r in sqlite3.connect(sys.argv[1]).execute('select M,N,K,library,round(time_ms*1000,2),detail from baselines')]" /tmp/b$run/bench.sqlite >> "$OUT/autotune_bench$run.log")
  tail -16 "$OUT/autotune_bench$run.log"
done
device_done
