#!/usr/bin/env bash
# Issue 16 on one H200, one command, under 9 minutes (about 5 expected): torch.ops.evo.matmul end to end.
#
#   OUT=/some/folder benchmarks/dispatch/gpu_session.sh        (from the repository root)
#
# Needs torch (CUDA), nvcc and a C++ compiler on the machine; evo's other dependencies either
# installed or as wheels in .whl/ (benchmarks/gpu_wheels.sh, carried to the machine). No network.
# 1. installs this tree's evo into /tmp/site (and the .whl dependencies, if any);
# 2. builds the extension (in the background, beside the sweep);
# 3. sweeps every family's shortlist (7 per shape) over M = 1..512 for four Llama-3-8B weights
#    (qkv 6144x4096, o 4096x4096, gate+up 28672x4096, down 4096x14336): 10 Ms each (the hopper family
#    alone, SWEEP_FAMILY=family=hopper, beat torch at none of them on the H200: small M needs skinny);
# 4. evo export --verify: dispatch tables, every range re-checked on this GPU (correct over the
#    range, faster than torch beyond noise at its lowest, middle and highest M), and per (N, K) the
#    torch path on W.T [K, N] beside nn.Linear's W [N, K] at the Ms torch serves (torch_layout);
# 5. the GPU tests of the op (eager, CUDA graph, torch.compile fullgraph, fresh data, Linear, the
#    kept W [N, K] bit for bit with nn.Linear);
# 6. per-call overhead beside torch.matmul, eager vs graph (overhead.py);
# 7. a Llama-3-8B block, prefill and decode, tokens/s evo vs plain PyTorch (block.py).
# Sizes and limits can be set from the environment (SHAPES, BUDGET, SWEEP_FAMILY, SWEEP_S, VERIFY_S,
# PYTEST_S, OVERHEAD_S, BLOCK_S). The limits add up to 8.5 minutes with install; what each step took
# on the H200 in the third session (14 shapes, not 40): install 15 s, sweep 45, verify 13, tests 35,
# overhead 14, block 22.
# Results in $OUT: *.log, sweep.sqlite, exported/ (manifest.json with the re-check), *.json.
set -uo pipefail
OUT=${OUT:?set OUT to the results folder}
REPO=$(pwd)
mkdir -p "$OUT"
export EVO_CACHE_DIR=/tmp/evo-cache TORCH_EXTENSIONS_DIR=/tmp/torch-ext MAX_JOBS=16 PYTHONUNBUFFERED=1 TORCH_CUDA_ARCH_LIST=9.0a
stamp() { echo "== $(date -u +%H:%M:%S) $*"; }

stamp install
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --upgrade --target /tmp/site .whl/*.whl
fi
if ! python3 -m pip install -q --no-index --no-deps --no-build-isolation --no-compile --upgrade --target /tmp/site . \
    > /tmp/evo_install.log 2>&1; then
  # no setuptools to build with: lay the folders out as the wheel does (pyproject.toml's package-dir)
  tail -3 /tmp/evo_install.log; echo "pip could not build evo here: copying the source folders into /tmp/site/evo"
  rm -rf /tmp/site/evo && mkdir -p /tmp/site && cp -r evo /tmp/site/evo || exit 1
  for f in archive islands mutators conf; do cp -r "$f" "/tmp/site/evo/$f" || exit 1; done
fi
export PYTHONPATH=/tmp/site
cd /tmp  # the checkout's evo/ folder must not shadow the installed package
python3 -c "import evo, torch; print('evo', evo.__version__, 'torch', torch.__version__, torch.cuda.get_device_name())" \
  | tee "$OUT/versions.log" || exit 1

stamp "extension build (background)"
(time python3 -c "
import evo.dispatch.extension as e
m = e.load(); print('built' if m else e.why_not())") > "$OUT/extension_build.log" 2>&1 &
BUILD=$!

stamp sweep
timeout -s INT ${SWEEP_S:-170} python3 -m evo sweep ${SWEEP_FAMILY-} shapes=inline \
  "shapes.list=${SHAPES:-[1-512x6144x4096,1-512x4096x4096,1-512x28672x4096,1-512x4096x14336]}" \
  sweep.sample=shortlist sweep.budget=${BUDGET:-7} evaluator.draws=1 evaluator.replays=5 evaluator.target_replay_ms=5 \
  evaluator.timeout_s=20 'evaluator.libraries=[torch]' archive.path="$OUT/sweep.sqlite" search.progress=false \
  2>&1 | tail -25 | tee "$OUT/sweep.log"
wait $BUILD; cat "$OUT/extension_build.log"

stamp "export --verify"
timeout ${VERIFY_S:-90} python3 -m evo export "$OUT/sweep.sqlite" --out "$OUT/exported" --verify 2>&1 | tail -60 | tee "$OUT/export_verify.log"
python3 - "$OUT/exported/manifest.json" <<'EOF' | tee "$OUT/table.log"
import json, sys
m = json.load(open(sys.argv[1]))
for t in m["tables"]:
    for r in t["ranges"]:
        print(f"N={t['N']:>5} K={t['K']:>5} M {r['m_lo']:>3}-{r['m_hi']:<3} {'evo  ' if r['use'] else 'torch'} {r['reason']}")
    lay = t.get("torch_layout")
    if lay:  # torch on W.T [K, N] / on W [N, K], per M torch serves: above 1, Linear's default keeps W
        print(f"N={t['N']:>5} K={t['K']:>5} torch path [K, N] / [N, K]: "
              + ", ".join(f"M={p['M']} {p['ratio']:.3f}{' slower' if p['slower'] else ''}" for p in lay["points"]))
EOF

stamp "GPU tests"
timeout ${PYTEST_S:-110} python3 -m pytest -p no:cacheprovider --import-mode=importlib --rootdir "$REPO" -c "$REPO/pyproject.toml" \
  -m gpu -q "$REPO/tests/test_dispatch_gpu.py" 2>&1 | tail -15 | tee "$OUT/pytest_dispatch_gpu.log"

stamp overhead
timeout ${OVERHEAD_S:-80} python3 "$REPO/benchmarks/dispatch/overhead.py" "$OUT/exported" "$OUT/overhead.json" 2>&1 | tee "$OUT/overhead.log"

stamp block
timeout ${BLOCK_S:-75} python3 "$REPO/benchmarks/dispatch/block.py" "$OUT/exported" "$OUT/block.json" 2>&1 | tee "$OUT/block.log"
stamp done
