#!/usr/bin/env bash
# For the next GPU session (session22/NEXT.md item 1), one H200, ~6-9 minutes: the GPU tests of the
# timing-mode fix and of the library baselines (test_gpu.py: a worker reads alike from its first job to its
# twelfth; the libraries name their cuBLASLt algorithm), then mode_probe4.py (which part of
# a sweep's job puts the worker in the slow mode). Into $OUT/probe.tgz.
# BACKEND=simulated: the probe's plumbing on the CPU test double (modelled times; no tests, no hooks).
#   OUT=/some/folder bash benchmarks/session22/next_probe.sh
set -uo pipefail
OUT=${OUT:?}
BACKEND=${BACKEND:-gpu}
REPO=$PWD
R=/tmp/probe && rm -rf $R && mkdir -p $R
if [ "$BACKEND" = gpu ]; then
  . benchmarks/device_common.sh; device_setup
  gpu_tests $R/pytest_gpu.txt 150 -m gpu gt/test_gpu.py -k "twelfth or name_the_cublaslt"
  cat $R/pytest_gpu.txt
else
  export PROBE_SIMULATED=1
  echo "SIMULATED (the CPU test double's modelled times, not measurements)" > $R/mode_probe4.txt
fi
(cd /tmp && timeout 400 python3 "$REPO/benchmarks/session22/mode_probe4.py") >> $R/mode_probe4.txt 2>&1
grep -v "^ *$" $R/mode_probe4.txt | tail -40
if [ "$BACKEND" = gpu ]; then device_done; cp "$OUT/gpu.txt" $R/; fi
tar -czf "$OUT/probe.tgz" -C /tmp probe
