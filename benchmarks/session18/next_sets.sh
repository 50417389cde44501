#!/usr/bin/env bash
# For the next GPU session (NEXT.md item 1), one H200, ~9.5 minutes: the GPU tests of what session 17 added
# and session 18 could not run (family kernels under programmatic dependent launch, split-K and cluster
# ones included; cuBLASLt's algorithm in the baselines' detail; the peaks), then llm_layers whole at 24
# shortlist picks with evaluator.pdl on (the default since session 18): issue 13's figure for the set as
# evo.dispatch runs its kernels. Its table, failures and archive come back in $OUT (llm_layers_*).
#   OUT=/some/folder bash benchmarks/session18/next_sets.sh
. benchmarks/device_common.sh
device_setup
gpu_tests "$OUT/pytest_gpu.txt" 110 -m gpu gt/test_gpu.py -k "library_baselines or measured_peaks or programmatic_dependent"
cat "$OUT/pytest_gpu.txt"
shortlist_sweep 0 llm_layers 24 450
tail -14 "$OUT/llm_layers_sweep.log"
device_done
