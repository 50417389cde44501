"""The evaluation pipeline: static checks -> compile -> GPU worker (correctness, timing) -> fitness.

The search process never runs a candidate in its own CUDA context: GPU work happens in worker
processes (`worker.py`, one per GPU) that the `WorkerPool` (`pool.py`) feeds, times out and
restarts. `SimulatedBackend` is the CPU test double with the same interface; every number it
produces is labelled backend="simulated" and is never a measurement.
"""
from evo.core.records import KernelResult, LibraryResult, Status, Timing

__all__ = ["KernelResult", "LibraryResult", "Timing", "Status"]
