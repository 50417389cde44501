#!/usr/bin/env bash
# Fourteenth session, one H200 (~9.5 minutes): (1) the GPU tests that cover the evaluator's paths (the
# thirteenth session's last mend, TimingSets.refresh taking its reference from `checked`, was not run on
# a GPU); (2) whether ncu reads counters here and the device-to-device copy bandwidth (issue 13's ceiling
# for small M); (3) session13/NEXT.md item 1: the split picks with deeper pipelines and the plain picks as
# transposed products, as pairs (session13/stages_ab.py), cut at 370 s. One tarball comes back.
#   OUT=/some/folder bash benchmarks/session14/run_a.sh
. benchmarks/device_common.sh
device_setup
R=/tmp/r14a && mkdir -p $R
(cd /tmp && rm -rf gt && cp -r "$REPO/tests" /tmp/gt && timeout 150 python3 -m pytest -q -p no:cacheprovider gt/test_gpu.py \
   gt/test_projection.py gt/test_input_integrity.py gt/test_launch_args.py -k "gpu or integrity or launch" 2>&1 | tail -8) > $R/pytest_gpu.txt
tail -3 $R/pytest_gpu.txt
(which ncu && timeout 20 ncu --version) > $R/ncu.txt 2>&1
python3 - > $R/copy_bw.txt 2>&1 <<'PY'
import torch
x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda"); y = torch.empty_like(x)
for _ in range(5): y.copy_(x)
s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
torch.cuda.synchronize(); s.record()
for _ in range(50): y.copy_(x)
e.record(); torch.cuda.synchronize()
ms = s.elapsed_time(e) / 50
print(f"copy 1 GiB device-to-device: {ms:.3f} ms, {2 * x.numel() / ms / 1e9:.2f} TB/s (read + write)")
PY
cat $R/copy_bw.txt
EVO_CACHE_DIR=/tmp/evo-cache timeout -s INT 420 python3 benchmarks/session13/stages_ab.py --sets llm_layers grid125 \
  --picks 3 --out $R --budget-s 370 > $R/stages_ab.log 2>&1
tail -8 $R/stages_ab.log
python3 benchmarks/session13/stages_pairs.py $R/stages.sqlite > $R/stages_pairs.txt 2>&1
device_done
cp "$OUT/gpu.txt" $R/ && xz -9 $R/stages.sqlite; tar -czf "$OUT/run_a.tgz" -C /tmp r14a
