#!/usr/bin/env bash
# The lead's shorter version of gpu_session.sh (fits the device time left): M 1..64 of two Llama-3-8B
# weights, every family's shortlist (7 per shape), shorter limits (each can still be set from the
# environment).
export SWEEP_FAMILY= SHAPES='[1-64x6144x4096,1-64x4096x14336]' BUDGET=7 SWEEP_S=${SWEEP_S:-80} \
  VERIFY_S=${VERIFY_S:-80} PYTEST_S=${PYTEST_S:-100} OVERHEAD_S=${OVERHEAD_S:-45} BLOCK_S=${BLOCK_S:-45}
exec bash "$(dirname "$0")/gpu_session.sh"
