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

# gpu_tests FILE SECONDS PYTEST_ARGS...: the checkout's tests, copied to /tmp/gt and run from /tmp (so that
# they import the installed evo, not the checkout's), cut at SECONDS; pytest's whole output into FILE (a
# failure's traceback with it: session 26 kept only the last lines and lost one), its last lines printed.
# Test files are named as gt/test_NAME.py.
gpu_tests() {
  local file=$1 seconds=$2
  shift 2
  (cd /tmp && rm -rf gt && cp -r "$REPO/tests" /tmp/gt && timeout "$seconds" python3 -m pytest -q -p no:cacheprovider "$@") \
    > "$file" 2>&1
  tail -8 "$file"
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

# quick_profiled R FILL_S RUN_S: the quick preset on GPU 0 (llm=none, racing on): a run cut at FILL_S that
# fills the compile cache, then one cut at RUN_S with EVO_PROFILE; into folder R: both logs, the profile
# table, the evaluations/s of both (benchmarks/cluster/throughput.py), and per run the statuses and how
# many correct evaluations were raced (one replay).
quick_profiled() {
  local R=$1 fill_s=$2 run_s=$3
  local args=(+experiment=quick llm=none 'evaluator.gpus=[0]' search.progress=false)
  (
    export EVO_CACHE_DIR=/tmp/evo-cache
    mkdir -p /tmp/w && cd /tmp/w && rm -f /tmp/w/quick_fill.sqlite* /tmp/w/quick_on.sqlite*
    local t0 t1 t2
    t0=$(date +%s.%N)
    timeout "$fill_s" evo run "${args[@]}" archive.path=/tmp/w/quick_fill.sqlite > "$R/quick_fill.log" 2>&1
    t1=$(date +%s.%N)
    EVO_PROFILE=$R/profile_on.jsonl timeout "$run_s" evo run "${args[@]}" archive.path=/tmp/w/quick_on.sqlite \
      > "$R/quick_on.log" 2>&1
    t2=$(date +%s.%N)
    python3 "$REPO/benchmarks/search/throughput_profile.py" "$R/profile_on.jsonl" > "$R/profile_on.txt" 2>&1
    python3 "$REPO/benchmarks/cluster/throughput.py" "quick_fill=/tmp/w/quick_fill.sqlite:$(python3 -c "print($t1 - $t0)")" \
      "quick_on=/tmp/w/quick_on.sqlite:$(python3 -c "print($t2 - $t1)")" > "$R/quick_throughput.txt" 2>&1
    for n in fill on; do
      python3 -c "import sqlite3, json, sys; db = sqlite3.connect(sys.argv[1]); ok = [json.loads(r[0]) for r in db.execute(\"select samples_json from evaluations where status = 'ok'\")]; print(sys.argv[2], db.execute('select status, count(*) from evaluations group by status').fetchall(), 'raced (one replay)', sum(len(t[0]['samples_ms']) < 5 for t in ok))" \
        "/tmp/w/quick_$n.sqlite" "$n" >> "$R/statuses.txt" 2>&1
    done
  )
}

# bench_under_ncu CSV SOURCE SHAPE NCU_ARGS...: one timed launch of the kernel in SOURCE (a .cu file) on SHAPE,
# past its checks, under ncu (the launch after the first 5 of hgemm, clocks as they are); ncu's CSV into
# CSV, its stderr beside it.
bench_under_ncu() {
  local csv=$1 src=$2 shape=$3; shift 3
  (mkdir -p /tmp/pw && cd /tmp/pw && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout 90 ncu --clock-control none --csv \
    "$@" -k regex:hgemm -s 5 -c 1 python3 -m evo bench "kernels=[$src]" shapes=inline "shapes.list=[$shape]" \
    'evaluator.libraries=[torch]' evaluator.replays=1 evaluator.draws=1 evaluator.timeout_s=300 search.progress=false \
    archive.path=/tmp/pw/$(basename "$csv" .csv).sqlite > "$csv" 2> "${csv%.csv}.err")
  echo "$(basename "$csv"): $(grep -c hgemm "$csv") rows"; tail -2 "${csv%.csv}.err"
}
