#!/usr/bin/env bash
# For a later GPU session (NEXT.md item 5), one H200, ~4 minutes (its timeouts add up to 490 s): where our
# kernels lose on grid125's worst shapes. Each shape's winner from run_b (winners_source.py) under ncu
# inside `evo bench` (one timed launch of it, past the checks: -s 5 -c 1), then torch.mm on the same shapes
# (session14/lib_profile.py), with the same counters: duration, DRAM and SM throughput, DRAM bytes, L2 hit
# rate, registers, achieved occupancy, grid and cluster. profile_summary.py puts ours and the library's side by side.
#   OUT=/some/folder bash benchmarks/session15/profile_worst.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/prof && mkdir -p $R/cu
SHAPES="4096x1024x256 16384x256x256 16384x4096x256 16384x16384x256 1024x256x16384"
python3 benchmarks/session15/winners_source.py --out $R/cu benchmarks/session15/run_b0/grid125_part0of2.sqlite.xz \
  benchmarks/session15/run_b1/grid125_part1of2.sqlite.xz --shapes $SHAPES | tee $R/winners.txt
METRICS=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__block_size,launch__cluster_dim_x,launch__cluster_dim_y
for s in $SHAPES; do
  [ -f $R/cu/$s.cu ] || continue
  (mkdir -p /tmp/pw && cd /tmp/pw && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout 80 ncu --clock-control none --csv \
    --metrics $METRICS -k regex:hgemm -s 5 -c 1 python3 -m evo bench "kernels=[$R/cu/$s.cu]" shapes=inline "shapes.list=[$s]" \
    'evaluator.libraries=[torch]' evaluator.replays=1 evaluator.draws=1 evaluator.timeout_s=300 search.progress=false \
    archive.path=/tmp/pw/$s.sqlite > $R/ours_$s.csv 2> $R/ours_$s.err)
  echo "$s: $(grep -c hgemm $R/ours_$s.csv) rows"; tail -2 $R/ours_$s.err
done
timeout 90 ncu --clock-control none --csv --metrics $METRICS python3 benchmarks/session14/lib_profile.py $SHAPES \
  > $R/lib.csv 2> $R/lib.err
tail -2 $R/lib.err
python3 benchmarks/session15/profile_summary.py $R $SHAPES | tee $R/summary.txt
device_done
cp "$OUT/gpu.txt" $R/ && tar -czf "$OUT/prof.tgz" -C /tmp prof
