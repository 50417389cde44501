#!/usr/bin/env bash
# The lead's run of issue 16 on one H200: gpu_session.sh as it is (M 1..512 of the four Llama-3-8B
# weights, every family's shortlist, 7 per shape, export --verify with the torch-layout check, the GPU tests,
# overhead.py, block.py), about 5 minutes, every limit set so the whole stays under 9.
#   OUT=/some/folder benchmarks/dispatch/lead_session.sh        (from the repository root)
exec bash "$(dirname "$0")/gpu_session.sh"
