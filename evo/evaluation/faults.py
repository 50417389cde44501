"""Faults: telling a kernel's CUDA error from evo's own trouble, and what a harness raises then.

Contract (docs/correctness.md): any CUDA error from any layer (the driver through cuda.bindings,
torch, cleanup code) during an evaluation is the candidate's fault; its worker reports it and
exits, and the pool starts a fresh one. Other exceptions are evo's own trouble (worker_error); the
worker is restarted after those too, so that nothing it may have left behind touches later jobs.
"""
from __future__ import annotations

from evo.core.records import KernelResult

#: words in exception texts (any layer, any version) that mean the CUDA context has been hit
CUDA_WORDS = ("cuda error", "cuda_error", "illegal memory access", "misaligned address", "launch failure",
              "illegal instruction", "device-side assert", "hardware stack error", "illegal address",
              "context is destroyed", "uncorrectable ecc", "an illegal", "cudaerror")


class ContextLost(Exception):
    """Raised by a harness: the CUDA context is unusable after a fault; report `result`, then exit."""

    def __init__(self, result: KernelResult):
        super().__init__(result.error)
        self.result = result


def is_cuda_error(e: BaseException) -> bool:
    """Does this exception (of any type: torch's AcceleratorError, RuntimeError, cuda.bindings'
    errors, ours) say that the GPU or its context failed?"""
    name = type(e).__name__.lower()
    text = str(e).lower()
    return "accelerator" in name or "cuda" in name or any(w in text for w in CUDA_WORDS)
