#!/usr/bin/env bash
# One H200, ~2 minutes: autotuned_algo.py on the shapes where cuBLASLt autotuned alone beats evo, plain and
# under ncu (kernel names, grids, clusters of the picked algorithms).
#   OUT=/some/folder bash benchmarks/session17/run_algo.sh
. benchmarks/device_common.sh
device_setup
SHAPES="4096x1024x256 16384x256x256 1024x4096x256 64x64x256 1024x256x16384 256x1024x16384"
timeout 60 python3 benchmarks/session17/autotuned_algo.py $SHAPES 2>&1 | tee $OUT/algo.txt
timeout 100 ncu --clock-control none --csv --nvtx --nvtx-include "picked/" \
  --metrics gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__cluster_dim_x,launch__cluster_dim_y,launch__registers_per_thread \
  python3 benchmarks/session17/autotuned_algo.py $SHAPES > $OUT/algo_ncu.csv 2> $OUT/algo_ncu.err
python3 -c 'import csv,sys
for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("==")):
    print(r["ID"], r["Kernel Name"][:90], r["Metric Name"], r["Metric Value"])' $OUT/algo_ncu.csv | head -120
device_done
