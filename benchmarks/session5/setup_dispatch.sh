# Sourced by run_c.sh and run_d.sh on the GPU machine: evo and its dependencies from the carried
# wheels (.whl/), the extension's build settings, the GPU's clocks into $OUT/gpu.txt.
set -u -o pipefail
OUT=${OUT:?}
REPO=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONSAFEPATH=1 TORCH_EXTENSIONS_DIR=/tmp/torch-ext MAX_JOBS=16 TORCH_CUDA_ARCH_LIST=9.0a PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv,noheader | tee $OUT/gpu.txt
