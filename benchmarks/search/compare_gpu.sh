#!/usr/bin/env bash
# `evo compare` on one H200: the search, the uniform-policy search, the shortlist sweep and a random
# sweep of the tensor-core families, at BUDGET evaluations per shape (default 24) on 10 real-model
# shapes + 4 grid shapes, SEEDS seeds (default 3), llm=none (structural operators only).
#
#   bash benchmarks/search/compare_gpu.sh              # writes $OUT/compare$BUDGET/ and $OUT/compare$BUDGET.log
#   BUDGET=96 SEEDS=1 ARMS='[search,shortlist]' bash benchmarks/search/compare_gpu.sh
#   ARMS='[search,shortlist,screened]' bash ...   # + the search with the cost model screening children
#
# Runtime: one arm is 14 x BUDGET evaluations (336 at 24); at 2.6-4 evaluations/s plus ~20 s per arm for
# workers, peaks and the libraries on 14 shapes, an arm takes ~105-150 s. The full comparison at 24 is
# 1 shortlist + 3 seeds x 3 arms = 10 arms (~20-25 min): more than one 10-minute command. So the
# script stops itself at LIMIT_S (default 510 s), then tabulates every finished arm. Finished arms are
# kept: copy $OUT/compare$BUDGET/ into benchmarks/search/compare$BUDGET_h200/ in the tree and run the
# script again; it starts from that copy and runs only what is missing (a search arm cut short is
# resumed). Arms run in this order: shortlist, then seed 0 (search, random_tc, uniform), seed 1, ...
# so the first command already gives search vs shortlist vs random at seed 0 (~4 arms in ~9 min).
# After the arms, evo compare re-times every arm's per-shape bests side by side (compare.retime_rounds=3:
# 3 x 14 x (arms x seeds + 1) evaluations, ~550 for the full set, ~1-2 min on two H200s); the "re-timed"
# row is the one to read (docs/search.md). A command cut at LIMIT_S before it re-times: the next one does.
# At BUDGET=96 one arm is 1344 evaluations (~6-8 min): one arm per command, so ARMS='[search,shortlist]'
# (two commands) answers "search vs shortlist at 96"; a search arm cut at LIMIT_S resumes next time.
set -u
BUDGET=${BUDGET:-24}
SEEDS=${SEEDS:-3}
ARMS=${ARMS:-[search,shortlist,random_tc,uniform]}
LIMIT_S=${LIMIT_S:-510}
OUT=${OUT:-/tmp/out}
# PYTHONSAFEPATH: `python3 -m evo` run from the checkout must import the installed evo, not the checkout's evo/ folder
export EVO_CACHE_DIR=${EVO_CACHE_DIR:-/tmp/evo-cache} PYTHONUNBUFFERED=1 PYTHONSAFEPATH=1
DIR=$OUT/compare$BUDGET
KEPT=benchmarks/search/compare${BUDGET}_h200
mkdir -p "$DIR"
if [ -d "$KEPT" ]; then cp -r "$KEPT"/. "$DIR"/; echo "continuing from $KEPT: $(ls "$KEPT" | grep -c sqlite) archive(s)"; fi
# 10 real-model shapes (Llama-3-8B qkv/o/gate+up/down at decode, prompt and batch token counts; ViT-B/16)
# + 4 shapes of the {64..16384}^3 grid
SHAPES='[1x6144x4096,1x28672x4096,77x4096x4096,77x28672x4096,333x6144x4096,333x4096x14336,512x4096x4096,2048x28672x4096,197x3072x768,197x768x3072,64x1024x4096,256x4096x1024,1024x1024x1024,4096x4096x4096]'
ARGS=(shapes=inline "shapes.list=$SHAPES" llm=none compare.budget=$BUDGET compare.seeds=$SEEDS "compare.arms=$ARMS"
      compare.out=$DIR archive.path=$DIR/unused.sqlite ${EXTRA:-})  # EXTRA="evaluator=simulated": a CPU dry run
date -u
timeout -s TERM "$LIMIT_S" python3 -m evo compare "${ARGS[@]}" 2>&1 | tee "$OUT/compare$BUDGET.run.log" | grep -v "^gen \|sweep \[" 
echo "--- the comparison of every finished arm:"
python3 -m evo -q compare "${ARGS[@]}" compare.report_only=true 2>&1 | tee "$OUT/compare$BUDGET.log"
date -u
