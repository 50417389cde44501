#!/usr/bin/env bash
# The lead's shorter version of gpu_session.sh, about 5 minutes on one H200: M 1..64 of two Llama-3-8B
# weights, every family's shortlist (7 per shape), short limits (each can still be set from the
# environment): install ~10 s, sweep 70 (extension build beside it), export --verify 60, GPU tests 60
# (21 s last run), overhead 50 (fallback table first), block 40 (18 s last run).
export SWEEP_FAMILY= SHAPES='[1-64x6144x4096,1-64x4096x14336]' BUDGET=7 SWEEP_S=${SWEEP_S:-70} \
  VERIFY_S=${VERIFY_S:-60} PYTEST_S=${PYTEST_S:-60} OVERHEAD_S=${OVERHEAD_S:-50} BLOCK_S=${BLOCK_S:-40}
exec bash "$(dirname "$0")/gpu_session.sh"
