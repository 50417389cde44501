#!/usr/bin/env bash
# Session 19, one H200, ~5 minutes: does hopper's design space hold kernels that beat its shortlist on
# five of the worst shapes of the session's grid125 and llm_layers runs and 512x512x16384 (long K, in
# neither set)? A seeded random sample of hopper's valid
# genomes (sweep.sample=random, 40 a shape), then the 24-pick shortlist of all families on the same shapes,
# each run with the libraries timed in it. Tables, failures and archives into $OUT/worst_*.
#   OUT=/some/folder bash benchmarks/session19/worst_random.sh
. benchmarks/device_common.sh
device_setup
# SHAPES, PER_SHAPE, SEED and the two cuts (RANDOM_S, SHORTLIST_S) may be given; the defaults are the run of session 19
SHAPES=${SHAPES:-'[1024x256x16384,256x1024x16384,512x512x16384,1024x4096x256,16384x256x256,96x4096x2304]'}
mkdir -p /tmp/w
run_sweep() {  # NAME SECONDS ARGS...
  local name=$1 seconds=$2; shift 2
  (
    export EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1
    mkdir -p /tmp/w && cd /tmp/w && date -u
    timeout -s INT "$seconds" python3 -m evo sweep shapes=inline "shapes.list=$SHAPES" "$@" \
      evaluator.replays=3 evaluator.target_replay_ms=10 evaluator.draws=2 search.progress=false \
      archive.path="/tmp/w/$name.sqlite" 2>&1 | tail -16
    date -u
    python3 -m evo archive elites --params "/tmp/w/$name.sqlite" > "/tmp/w/${name}_per_shape.txt" 2>&1
    python3 -m evo archive failures "/tmp/w/$name.sqlite" > "/tmp/w/${name}_failures.txt" 2>&1
  ) > "/tmp/w/${name}.log" 2>&1
  cat "/tmp/w/${name}.log"
}
run_sweep random ${RANDOM_S:-185} family=hopper sweep.sample=random sweep.budget=${PER_SHAPE:-40} search.seed=${SEED:-19}
run_sweep shortlist ${SHORTLIST_S:-95} sweep.sample=shortlist sweep.budget=24
device_done
cd /tmp/w && gzip -9 *.sqlite && tar -czf "$OUT/worst.tgz" *.log *_per_shape.txt *_failures.txt *.sqlite.gz
