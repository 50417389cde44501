#!/usr/bin/env bash
# For the next GPU session, one H200 (~6 minutes), with session12's patches applied in the working tree
# (git apply benchmarks/session12/input_integrity.patch, then launch_args_after_integrity.patch) and the
# evo wheel in .whl built from that working tree (not from HEAD):
#   rm -rf /tmp/wtsrc && mkdir /tmp/wtsrc && git ls-files -co --exclude-standard | tar -cT - | tar -x -C /tmp/wtsrc
#   rm -f .whl/evo_hgemm-*.whl && .venv/bin/pip wheel -q --no-deps -w .whl /tmp/wtsrc
# (1) every GPU test, the selftest's new bad_rewrites_inputs.cu case included; (2) the quick preset,
# race on: a cold fill cut at 60 s, then a warm run cut at 60 s with EVO_PROFILE, against session12's
# run_b (3.52 evaluations/s, 164 in 60 s). Ship a patch only if every test passes and the quick runs'
# evaluations are correct as often as in run_b (164 of 164). One tarball comes back.
#   OUT=/some/folder bash benchmarks/session12/next_run_a.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/r13a && mkdir -p $R
(cd /tmp && cp -r "$REPO/tests" /tmp/gt && timeout 240 python3 -m pytest -q -p no:cacheprovider gt/test_gpu.py \
   gt/test_projection.py gt/test_input_integrity.py gt/test_launch_args.py -k "gpu or integrity or launch" 2>&1 | tail -25) > $R/pytest_gpu.txt
quick_profiled $R 60 60
device_done
cp "$OUT/gpu.txt" $R/ && tar -czf "$OUT/next_run_a.tgz" -C /tmp r13a && cat $R/pytest_gpu.txt $R/quick_throughput.txt $R/statuses.txt
