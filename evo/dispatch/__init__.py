"""Run exported kernels from PyTorch: `evo.dispatch.matmul(a, b)`, `Linear`, `patch(model)`.

    import evo.dispatch
    evo.dispatch.configure("exported/")          # or set EVO_KERNELS=exported/
    c = evo.dispatch.matmul(a, b)                # fp16 CUDA tensors, row-major
    evo.dispatch.explain(a, b)                   # which path that call takes, and why
    evo.dispatch.patch(model)                    # nn.Linear of (N, K) a kernel serves here -> evo.dispatch.Linear
    evo.dispatch.memory_report(model)            # which replaced layers keep their weight twice, and the bytes

A call goes into a C++ extension (built once on this machine; see extension.py): directly through
pybind when eager, as `torch.ops.evo.matmul`/`linear` under torch.compile. The C++ code launches
the kernel that the export's dispatch table gives for its (N, K) and M on the current stream, and
runs torch for everything else: another shape, dtype or device, a
non-contiguous or misaligned tensor, an M outside the exported ranges, or a range whose kernel was
not re-checked faster than torch on this GPU (`evo export --verify`; evo.core.dispatch_table).
Kernels that split K keep one workspace per device: their eager launches are serialised across streams
(docs/export.md).
"""
from __future__ import annotations

from evo.dispatch.dispatcher import Dispatcher, configure, default, explain, matmul

__all__ = ["Dispatcher", "Linear", "configure", "default", "explain", "matmul", "memory_report", "patch"]


def __getattr__(name: str):  # Linear, patch and memory_report need torch: imported only when asked for
    if name in ("Linear", "patch", "memory_report"):
        try:
            from evo.dispatch import linear
        except ModuleNotFoundError as e:
            if e.name != "torch":
                raise
            from evo.core.errors import EvoError
            from evo.core.extras import install_hint
            raise EvoError(f"evo.dispatch.{name} needs torch, which is not installed here: {install_hint('gpu')}, "
                           "on the GPU machine") from None
        return getattr(linear, name)
    raise AttributeError(f"module 'evo.dispatch' has no attribute {name!r}")
