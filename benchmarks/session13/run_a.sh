#!/usr/bin/env bash
# Thirteenth session, one H200 (~8 minutes), with session12's two patches applied (input integrity, then
# the launch-parameter block) and the duplicate re-plan of the search, the evo wheel built from that
# working tree:
#   rm -rf /tmp/wtsrc && mkdir /tmp/wtsrc && git ls-files -co --exclude-standard | tar -cT - | tar -x -C /tmp/wtsrc
#   rm -f .whl/evo_hgemm-*.whl && .venv/bin/pip wheel -q --no-deps -w .whl /tmp/wtsrc
# (1) every GPU test, the selftest's bad_rewrites_inputs.cu case included; (2) the quick preset, race on,
# cold fill cut at 60 s then a warm profiled run cut at 60 s (session12 run_b: 3.52 evaluations/s, 164 of
# 164 correct); (3) `evo sweep` at the full 24 shortlist picks, libraries in the same run, of the 9 shapes
# that were below 0.85 of the best library (issue 13; session10's grid125 sweep was cut with 14-18 picks
# on those). One tarball comes back.
#   OUT=/some/folder bash benchmarks/session13/run_a.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/r13a && mkdir -p $R
(cd /tmp && cp -r "$REPO/tests" /tmp/gt && timeout 220 python3 -m pytest -q -p no:cacheprovider gt/test_gpu.py \
   gt/test_projection.py gt/test_input_integrity.py gt/test_launch_args.py -k "gpu or integrity or launch" 2>&1 | tail -25) > $R/pytest_gpu.txt
cat $R/pytest_gpu.txt | tail -3
quick_profiled $R 60 60
cat $R/quick_throughput.txt $R/statuses.txt
LOW='[64x64x256,64x4096x4096,1024x256x16384,256x1024x16384,256x1024x4096,256x256x16384,16384x4096x256,61x4096x2304,96x4096x2304]'
(
  export EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1
  mkdir -p /tmp/wl && cd /tmp/wl
  timeout -s INT 150 python3 -m evo sweep shapes=inline "shapes.list=$LOW" sweep.sample=shortlist sweep.budget=24 \
    evaluator.replays=3 evaluator.target_replay_ms=10 evaluator.draws=2 search.progress=false \
    archive.path=/tmp/wl/low.sqlite 2>&1 | tail -30
  python3 -m evo archive elites --params /tmp/wl/low.sqlite > $R/low_per_shape.txt 2>&1
  python3 -m evo archive failures /tmp/wl/low.sqlite > $R/low_failures.txt 2>&1
  cp /tmp/wl/low.sqlite $R/
) > $R/low_sweep.log 2>&1
tail -32 $R/low_sweep.log
device_done
cp "$OUT/gpu.txt" $R/ && tar -czf "$OUT/run_a.tgz" -C /tmp r13a
