"""evo: evolutionary search for half-precision GEMM kernels on Hopper GPUs.

One import package built from the repository's top-level folders: `evo` (the core, the
evaluation pipeline, the search and the command line), `evo.archive`, `evo.islands`,
`evo.mutators` and `evo.conf`. Layers point one way; see docs/layers.md.
"""
from evo.core.version import VERSION

__version__ = VERSION
__all__ = ["__version__"]
