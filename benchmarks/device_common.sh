# Sourced by the GPU session scripts (benchmarks/session7/ and later), with OUT set and the checkout as
# the working folder: the clocks before and after a command, evo installed from its wheel in `.whl`
# outside the checkout, and the shortlist sweep the sessions time on each shape set.
set -uo pipefail
OUT=${OUT:?}
REPO=$PWD

gpu_clocks() {
  nvidia-smi --query-gpu=index,name,driver_version,clocks.max.sm,clocks.sm,clocks.mem,temperature.gpu,power.draw \
    --format=csv,noheader
}

# The clocks into $OUT/gpu.txt, then evo and its dependencies from .whl into /tmp/site (exits on failure).
device_setup() {
  { date -u; gpu_clocks; } | tee "$OUT/gpu.txt"
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH PYTHONUNBUFFERED=1
}

device_done() {
  { date -u; gpu_clocks; } | tee -a "$OUT/gpu.txt"
  ls -la "$OUT"
}

# shortlist_sweep GPU SET PICKS SECONDS: `evo sweep shapes=SET` at PICKS shortlist picks per shape on GPU
# (3 replays of 10 ms, 2 correctness draws, libraries in the same run), cut at SECONDS; then its per-shape
# table, its failures and the gzipped archive into $OUT/SET_*. Its log goes to $OUT/SET_sweep.log.
shortlist_sweep() {
  local gpu=$1 set=$2 picks=$3 seconds=$4
  (
    export CUDA_VISIBLE_DEVICES=$gpu EVO_CACHE_DIR=/tmp/evo-cache$gpu PYTHONSAFEPATH=1
    mkdir -p "/tmp/w$gpu" && cd "/tmp/w$gpu" && date -u
    timeout -s INT "$seconds" python3 -m evo sweep shapes="$set" sweep.sample=shortlist sweep.budget="$picks" \
      evaluator.replays=3 evaluator.target_replay_ms=10 evaluator.draws=2 search.progress=false \
      archive.path="/tmp/w$gpu/$set.sqlite" 2>&1 | tail -30
    date -u
    python3 -m evo archive elites --params "/tmp/w$gpu/$set.sqlite" > "$OUT/${set}_per_shape.txt" 2>&1
    python3 -m evo archive failures "/tmp/w$gpu/$set.sqlite" > "$OUT/${set}_failures.txt" 2>&1
    gzip -c "/tmp/w$gpu/$set.sqlite" > "$OUT/$set.sqlite.gz"
  ) > "$OUT/${set}_sweep.log" 2>&1
}
