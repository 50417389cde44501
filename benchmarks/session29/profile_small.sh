#!/usr/bin/env bash
# NEXT.md item 4 (one GPU, ~5 minutes; timeouts add up to 600 s): where the time goes on the small shapes that
# cuBLASLt wins with evo's own tile and split (library_gap.py). Session 28's grid125 winners on four shapes
# under ncu inside `evo bench` beside torch.mm (device_common.sh's bench_under_ncu; profile_summary.py side by side);
# then evo's winner and torch.mm on 4096x256x64 with the launch, occupancy, warp-state and scheduler sections
# (stall reasons), so the two kernels' cycles can be set side by side. Into $OUT/prof29.tgz.
#   OUT=/some/folder bash benchmarks/session29/profile_small.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/prof29 && rm -rf $R && mkdir -p $R/cu $R/stalls
SHAPES=${SHAPES:-"4096x256x64 64x16384x64 4096x256x256 256x256x16384"}
python3 benchmarks/session15/winners_source.py --out $R/cu benchmarks/session28/grid125/grid125.sqlite.gz \
  --shapes $SHAPES | tee $R/winners.txt
METRICS=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__block_size,launch__cluster_dim_x,launch__cluster_dim_y
for s in $SHAPES; do
  [ -f $R/cu/$s.cu ] && bench_under_ncu $R/ours_$s.csv $R/cu/$s.cu $s --metrics $METRICS
done
timeout 90 ncu --clock-control none --csv --metrics $METRICS python3 benchmarks/session14/lib_profile.py $SHAPES \
  > $R/lib.csv 2> $R/lib.err
tail -2 $R/lib.err
python3 benchmarks/session15/profile_summary.py $R $SHAPES | tee $R/summary.txt
SECTIONS="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats"
bench_under_ncu $R/stalls/ours_4096x256x64.csv $R/cu/4096x256x64.cu 4096x256x64 $SECTIONS
timeout 60 ncu --clock-control none --csv $SECTIONS -s 3 -c 1 python3 benchmarks/session14/lib_profile.py 4096x256x64 \
  > $R/stalls/torch_4096x256x64.csv 2> $R/stalls/torch.err
grep -h -E '"(Duration|Elapsed Cycles|Warp Cycles Per Issued Instruction|Stall|Cluster|Grid Size|Block Size|Registers)' \
  $R/stalls/ours_4096x256x64.csv $R/stalls/torch_4096x256x64.csv | cut -c1-220 | head -80
device_done
cp "$OUT/gpu.txt" $R/ && tar -czf "$OUT/prof29.tgz" -C /tmp prof29
