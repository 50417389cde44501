"""evo: evolutionary search for half-precision GEMM kernels on Hopper GPUs.

The core package: shapes, the kernel model, static checks, the compile stage, the evaluation
pipeline, the search driver and the `evo` command line. See README.md for the tour.
"""
__version__ = "0.1.0"
