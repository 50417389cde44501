#!/usr/bin/env bash
# Fourteenth session, one H200 (~7.5 minutes), with the shortlist taking up to 7 stages for split-K over L2
# with small stages (run_a's pairs): (1) llm_layers at 24 shortlist picks, libraries in the same run (issue
# 13's figure; session10's run_b measured 0.974 with the 5-stage cap); (2) what the library runs on the
# shapes the family cannot reach: torch.mm under ncu (kernel, grid, duration, DRAM throughput).
#   OUT=/some/folder bash benchmarks/session14/run_b.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/r14b && mkdir -p $R
shortlist_sweep 0 llm_layers 24 430
tail -5 "$OUT/llm_layers_sweep.log"
timeout 90 ncu --clock-control none --csv --metrics gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size,launch__block_size,launch__cluster_dim_x,launch__cluster_dim_y,sm__throughput.avg.pct_of_peak_sustained_elapsed \
  python3 benchmarks/session14/lib_profile.py 64x4096x4096 77x4096x4096 333x6144x4096 1024x256x16384 256x1024x16384 256x256x16384 64x64x256 \
  > $R/lib_ncu.csv 2> $R/lib_ncu.err
wc -l $R/lib_ncu.csv; tail -3 $R/lib_ncu.err
device_done
mv "$OUT"/llm_layers_* "$OUT/llm_layers.sqlite.gz" $R/ 2>/dev/null; cp "$OUT/gpu.txt" $R/; tar -czf "$OUT/run_b.tgz" -C /tmp r14b
