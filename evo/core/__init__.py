"""The bottom layer: plain data types and errors that every other part of evo may import.

Shapes and FLOP buckets (`shapes`), the kernel model with its in-source launch declaration
(`kernel`, `expr`), result records and statuses (`records`), named errors (`errors`), the RNG
helper (`rng`) and speedup summaries (`summary`). Nothing here imports another part of evo or a
third-party package.
"""
