"""What a harness raises when a kernel has broken its process's CUDA context."""
from __future__ import annotations

from evo.core.records import KernelResult


class ContextLost(Exception):
    """Raised by a harness: the CUDA context is unusable after a fault; report `result`, then exit."""

    def __init__(self, result: KernelResult):
        super().__init__(result.error)
        self.result = result
