#!/usr/bin/env bash
# Fifth session, third command, one H200 (about 3 minutes): overhead.py again on the first command's
# export, now with samples of at least 10 ms in both modes. The export travelled as
# benchmarks/session5/export_fifth (not kept in the repository): dispatch/exported/ of
# benchmarks/dispatch/fifth_session/session_files.tgz with its cubins compiled off the GPU machine (nvcc
# -cubin with each entry's nvcc_flags; the session had deleted them to keep its output small).
source "$(dirname "$0")/setup_dispatch.sh"
cd /tmp && timeout 420 python3 $REPO/benchmarks/dispatch/overhead.py $REPO/benchmarks/session5/export_fifth $OUT/overhead.json 2>&1 | tee $OUT/overhead.log | tail -100
nvidia-smi --query-gpu=index,clocks.sm,temperature.gpu,power.draw --format=csv,noheader | tee -a $OUT/gpu.txt
