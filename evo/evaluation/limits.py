"""Limits known before any work starts: a shape whose buffers cannot fit the GPU is refused up
front, not discovered as an out-of-memory error in the middle of a run."""
from __future__ import annotations

from evo.core.errors import ConfigError
from evo.core.records import DeviceInfo
from evo.core.shapes import Shape

#: the share of device memory one evaluation may plan to use (the rest: context, allocator, libraries)
USABLE = 0.8


def evaluation_bytes(shape: Shape) -> int:
    """Peak device memory of one evaluation, from the harness's buffers: guarded A, B, C with
    copies of A and B (fp16), the fp32 reference and its inputs, and two timing sets (fp16) with
    the fp32 copies of one set that the output check makes."""
    MK, KN, MN = shape.M * shape.K, shape.K * shape.N, shape.M * shape.N
    correctness = 2 * (MK + KN + MN) + 2 * (MK + KN) + 4 * (MK + KN + MN) + (3 << 20)
    timing = 2 * 2 * (MK + KN + MN) + 4 * (MK + KN + 2 * MN)
    return correctness + timing


def check_fits(shapes: list[Shape], devices: list[DeviceInfo]) -> None:
    """Raise a ConfigError naming the shapes that cannot fit the smallest GPU."""
    known = [d.memory_bytes for d in devices if d.memory_bytes]
    if not known:
        return
    budget = USABLE * min(known)
    too_big = [s for s in shapes if evaluation_bytes(s) > budget]
    if too_big:
        listed = ", ".join(f"{s} ({evaluation_bytes(s) / 2**30:.0f} GiB)" for s in too_big[:5])
        more = f" and {len(too_big) - 5} more" if len(too_big) > 5 else ""
        raise ConfigError(f"{len(too_big)} shape(s) cannot fit the GPU's {min(known) / 2**30:.0f} GiB: {listed}{more}; "
                          f"drop them from the shape set")
