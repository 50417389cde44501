#!/usr/bin/env bash
# For the next GPU session (NEXT.md item 1), one H200, ~4 minutes: why does a multicast pair with split-K run
# slower than the same split-K kernel unpaired, at the same 128 CTAs (session 15: 24.66 -> 26.85 us on
# 1024x256x16384), while cuBLAS runs split-K in 2-CTA clusters there? The four kernels in
# pair_kernels.tar.xz (rendered with pair_splitk.patch applied: the grid125 winner of 1024x256x16384,
# 64x128 tiles, split-K 4, ordered partials or atomics, unpaired and paired) are (1) timed side by side by `evo bench` on 1024x256x16384 and
# 256x1024x16384, libraries in the same run, 5 replays of 10 ms, and (2) run under ncu one launch each
# (launch statistics, occupancy with the most clusters resident at once, speed of light, memory tables,
# warp states). Into $OUT/pair_profile.tgz.
#   OUT=/some/folder bash benchmarks/session19/next_pair_profile.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/pairprof && mkdir -p $R
tar -xJf benchmarks/session19/pair_kernels.tar.xz -C /tmp && P=/tmp/pair
KERNELS="$P/split4.cu,$P/split4_pair.cu,$P/split4_atomic.cu,$P/split4_atomic_pair.cu"
(mkdir -p /tmp/pb && cd /tmp/pb && EVO_CACHE_DIR=/tmp/evo-cache PYTHONSAFEPATH=1 timeout -s INT 120 python3 -m evo bench \
  "kernels=[$KERNELS]" shapes=inline 'shapes.list=[1024x256x16384,256x1024x16384]' evaluator.replays=5 \
  evaluator.target_replay_ms=10 evaluator.draws=2 search.progress=false archive.path=$R/bench.sqlite) > $R/bench.log 2>&1
tail -20 $R/bench.log
for k in split4 split4_pair split4_atomic split4_atomic_pair; do
  bench_under_ncu $R/$k.csv $P/$k.cu 1024x256x16384 --section LaunchStats --section Occupancy --section SpeedOfLight \
    --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SchedulerStats
done
# the metrics that answer the questions, per kernel: name, unit, value (ncu's CSV quotes fields with commas)
for k in split4 split4_pair split4_atomic split4_atomic_pair; do
  echo "== $k"
  python3 -c "
import csv, re, sys
want = re.compile(r'Duration|Grid Size|Cluster|Waves Per SM|Occupancy|Throughput|Warp Cycles Per Issued|Stall')
for row in csv.DictReader(line for line in open(sys.argv[1]) if line.startswith('\"')):
    if want.search(row.get('Metric Name', '')):
        print(f\"{row['Section Name'][:24]:<24} {row['Metric Name'][:44]:<44} {row['Metric Unit']:>10} {row['Metric Value']}\")
" $R/$k.csv | head -40
done | tee $R/summary.txt
device_done
cp "$OUT/gpu.txt" $R/ && xz -9 $R/*.sqlite; tar -czf "$OUT/pair_profile.tgz" -C /tmp pairprof
