"""Worker side: the parameters of many launches of one kernel, built at once.

Timing launches a kernel once on each of up to 8192 buffer sets; building each launch's parameters in
Python (ctypes values, tensor maps through cuda.bindings) took 16-23 us a set, longer than capturing
the launches. Here they are one numpy block filled by array operations; only the tensor maps' addresses
are set one by one, by the driver (`maps`: evo.evaluation.gpu_launch.TensorMaps). No CUDA import: the
layout is tested on the CPU.
"""
from __future__ import annotations

import math
from typing import Protocol

import numpy as np

VALUES_HEAD = 64  # A, B, C pointers and M, N, K ints at 0-35; the tensor maps from here, 64-byte aligned
MAP_BYTES = 128


class Maps(Protocol):
    specs: list[dict]

    def template(self, j: int, ptr: int) -> tuple[bytes, int]:
        """Map j's bytes and the address they hold (encoded once, for whichever address came first)."""

    def readdress(self, where: int, j: int, ptr: int) -> None: ...


class LaunchArgs:
    """The parameters of `count` launches whose A, B and C lie `steps` bytes apart from `bases`: launch i
    on buffer i of each, or, with `a_order`, on A buffer a_order[i] (a permutation: see
    gpu_buffers.TimingSets). Per launch, a row of the block: the values (see VALUES_HEAD; each tensor map
    in a 64-byte aligned slot) and then the void*[] the driver reads, pointing at them. `address(i)` is
    launch i's void*[]."""

    def __init__(self, maps: Maps, bases: tuple[int, int, int], steps: tuple[int, int, int], count: int,
                 m: int, n: int, k: int, *, a_order: list[int] | None = None):
        slots = [VALUES_HEAD + MAP_BYTES * j for j in range(len(maps.specs))]
        offsets = [0, 8, 16, 24, 28, 32] + slots
        self._params_at = VALUES_HEAD + MAP_BYTES * len(slots)
        self.stride = self._params_at + 64 * math.ceil(8 * len(offsets) / 64)
        self._block = np.zeros(count * self.stride + 64, dtype=np.uint8)  # kept: the driver reads it at launch
        lead = -self._block.ctypes.data % 64
        self.base = self._block.ctypes.data + lead
        rows = self._block[lead:lead + count * self.stride].reshape(count, self.stride)
        index = np.arange(count, dtype=np.uint64)
        if a_order is not None and sorted(a_order) != list(range(count)):
            raise ValueError(f"a_order must be a permutation of range({count})")
        which = [index if a_order is None else np.asarray(a_order, dtype=np.uint64), index, index]
        ptrs = np.stack([np.uint64(b) + w * np.uint64(st) for b, st, w in zip(bases, steps, which)], axis=1)
        rows[:, 0:24].view(np.uint64)[:] = ptrs
        rows[:, 24:36].view(np.int32)[:] = (m, n, k)
        starts = np.uint64(self.base) + index * np.uint64(self.stride)
        rows[:, self._params_at:self._params_at + 8 * len(offsets)].view(np.uint64)[:] = (
            starts[:, None] + np.array(offsets, dtype=np.uint64)[None, :])
        for j, (spec, slot) in enumerate(zip(maps.specs, slots)):
            column = "ABC".index(spec["operand"])
            template, holds = maps.template(j, bases[column])
            rows[:, slot:slot + MAP_BYTES] = np.frombuffer(template, dtype=np.uint8)
            for i in range(count):  # the template holds the address of an earlier call's buffer, or this one's
                ptr = int(ptrs[i, column])
                if ptr != holds:
                    maps.readdress(self.base + i * self.stride + slot, j, ptr)

    def address(self, i: int = 0) -> int:
        return self.base + i * self.stride + self._params_at
