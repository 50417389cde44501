#!/usr/bin/env bash
# Wheels for a GPU machine without network access (Python 3.12, x86-64, CUDA 13 and torch installed):
# evo itself plus the dependencies that machine lacks, into ./.whl (ignored by git).
#
#   benchmarks/gpu_wheels.sh [PACKAGE ...]      # PACKAGE: what the machine lacks beyond evo's own needs
#
# pycuda ships as source on PyPI: build its wheel once on a machine with the same CUDA toolkit and
# Python (`pip wheel --no-deps pycuda`) and put it in .whl too. On the GPU machine:
#   pip install --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
# and run evo and the tests from outside the repository (`cd /tmp`): with the checkout's root on
# sys.path, its evo/ folder would shadow the installed package (see README, "Install").
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
mkdir -p .whl
python3 -m pip wheel -q --no-deps -w .whl .
deps=$(python3 -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]))')
# hydra-core needs antlr4-python3-runtime, which PyPI ships as source only: build it here
python3 -m pip wheel -q --no-deps -w .whl 'antlr4-python3-runtime==4.9.3'
python3 -m pip download -q --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any \
  --find-links .whl -d .whl $deps "$@"
ls .whl
