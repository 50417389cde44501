#!/usr/bin/env bash
# For the next GPU session (session20/NEXT.md item 2), one H200, ~3 minutes: does host load (nvcc compiling on
# every core, as during a sweep) stretch the timings of libraries or kernels? `evo bench` on six shapes
# (session 20's grid125 winners via kernels_of, and the three libraries), four runs in turn: quiet, loaded,
# quiet, loaded. The load: 16 loops compiling a hopper kernel with nvcc. Then context.py's table. Into
# $OUT/context.tgz. BACKEND=simulated runs it on the CPU (a dry run: modelled times).
#   OUT=/some/folder bash benchmarks/session20/next_context.sh
set -uo pipefail
OUT=${OUT:?}
BACKEND=${BACKEND:-gpu}
if [ "$BACKEND" = gpu ]; then . benchmarks/device_common.sh; device_setup; fi
R=/tmp/context && rm -rf $R && mkdir -p $R
xz -dc benchmarks/session20/grid125/grid125.sqlite.xz > $R/grid125.sqlite
tar -xJf benchmarks/session19/pair_kernels.tar.xz -C $R pair/split4.cu
SHAPES='[64x256x16384,1024x256x16384,256x1024x16384,4096x1024x256,64x64x256,256x256x4096]'
load_on() {
  touch $R/load.on
  for i in $(seq 16); do
    (while [ -e $R/load.on ]; do nvcc -arch=sm_90a -cubin -o $R/l$i.cubin $R/pair/split4.cu > /dev/null 2>&1; done) &
  done
  sleep 5  # the compiles are under way before timing starts
}
load_off() { rm -f $R/load.on; wait; }
for run in quiet1 load1 quiet2 load2; do
  case $run in load*) load_on ;; esac
  (cd $R && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout -s INT 90 python3 -m evo bench \
    evaluator=$([ "$BACKEND" = gpu ] && echo gpu || echo simulated) "kernels_of=$R/grid125.sqlite" \
    shapes=inline "shapes.list=$SHAPES" evaluator.replays=3 evaluator.target_replay_ms=10 search.progress=false \
    archive.path=$R/$run.sqlite) > $R/$run.log 2>&1
  case $run in load*) load_off ;; esac
  tail -3 $R/$run.log
done
python3 benchmarks/session20/context.py quiet1=$R/quiet1.sqlite load1=$R/load1.sqlite quiet2=$R/quiet2.sqlite \
  load2=$R/load2.sqlite | tee $R/context.txt
if [ "$BACKEND" = gpu ]; then device_done; cp "$OUT/gpu.txt" $R/; fi
rm -f $R/grid125.sqlite $R/*.cubin && xz -9 $R/*.sqlite; tar -czf "$OUT/context.tgz" -C /tmp context
