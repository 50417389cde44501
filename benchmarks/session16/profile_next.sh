#!/usr/bin/env bash
# For the next GPU session (NEXT.md item 3), one H200, ~7 minutes (timeouts add up to 550 s): (0) the
# coverage check of every TMA store configuration on the 1096 shapes (coverage_check.py, ~3900 checks);
# (1) session15's profile of the worst shapes, on this session's grid125 winners (winners_source.py reads the
# .gz archive), ours under ncu inside `evo bench` beside torch.mm, profile_summary.py side by side; (2) the
# TMA store pair whose main loop ran ~20% slower (render_pair.py: 64x64 tiles, 13 stages, on 64x64x16384),
# both kernels under ncu with the warp-state, scheduler and memory sections (stall reasons, bank conflicts).
#   OUT=/some/folder bash benchmarks/session16/profile_next.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/prof && mkdir -p $R/cu $R/pair
EVO_CACHE_DIR=/tmp/evo-cache EVO_COVERAGE_ONLY=TMA_STORE timeout -s INT 100 python3 benchmarks/seeds/coverage_check.py \
  $R/coverage hopper > $R/coverage_tma.log 2>&1
tail -6 $R/coverage_tma.log
SHAPES="64x64x256 1024x256x16384 4096x1024x256 16384x256x256"
python3 benchmarks/session15/winners_source.py --out $R/cu benchmarks/session16/grid125/grid125.sqlite.gz \
  --shapes $SHAPES | tee $R/winners.txt
METRICS=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__block_size,launch__cluster_dim_x,launch__cluster_dim_y
# bench_under_ncu CSV SOURCE SHAPE NCU_ARGS...: one timed launch of SOURCE on SHAPE, past the checks, under ncu
bench_under_ncu() {
  local csv=$1 src=$2 shape=$3; shift 3
  (mkdir -p /tmp/pw && cd /tmp/pw && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout 60 ncu --clock-control none --csv \
    "$@" -k regex:hgemm -s 5 -c 1 python3 -m evo bench "kernels=[$src]" shapes=inline "shapes.list=[$shape]" \
    'evaluator.libraries=[torch]' evaluator.replays=1 evaluator.draws=1 evaluator.timeout_s=300 search.progress=false \
    archive.path=/tmp/pw/$(basename $csv .csv).sqlite > $csv 2> ${csv%.csv}.err)
  echo "$(basename $csv): $(grep -c hgemm $csv) rows"; tail -2 ${csv%.csv}.err
}
for s in $SHAPES; do
  [ -f $R/cu/$s.cu ] && bench_under_ncu $R/ours_$s.csv $R/cu/$s.cu $s --metrics $METRICS
done
timeout 90 ncu --clock-control none --csv --metrics $METRICS python3 benchmarks/session14/lib_profile.py $SHAPES \
  > $R/lib.csv 2> $R/lib.err
tail -2 $R/lib.err
python3 benchmarks/session15/profile_summary.py $R $SHAPES | tee $R/summary.txt
python3 benchmarks/session16/render_pair.py --out $R/pair | tee $R/pair/ids.txt
for v in plain tma2; do
  bench_under_ncu $R/pair/$v.csv $R/pair/$v.cu 64x64x16384 --section SpeedOfLight --section WarpStateStats \
    --section SchedulerStats --section MemoryWorkloadAnalysis_Tables --section LaunchStats --section Occupancy
done
grep -h -E '"(Duration|Warp Cycles Per Issued Instruction|Stall|Shared|Dynamic Shared Memory Per Block|Driver Shared)' \
  $R/pair/plain.csv $R/pair/tma2.csv | cut -c1-200 | head -60
device_done
cp "$OUT/gpu.txt" $R/ && tar -czf "$OUT/prof.tgz" -C /tmp prof
