"""Run exported kernels from PyTorch: `evo.dispatch.matmul(a, b)`.

    import evo.dispatch
    evo.dispatch.configure("exported/")          # or set EVO_KERNELS=exported/
    c = evo.dispatch.matmul(a, b)                # fp16 CUDA tensors, row-major

For a shape in the manifest the exported kernel runs on the current stream; every other call
(another shape, dtype, device, a non-contiguous or misaligned tensor) goes to torch.matmul.
Kernels that split K share a module-level workspace: do not run one on several streams at once.
"""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

_default = None


class Dispatcher:
    def __init__(self, directory: str | os.PathLike):
        self.dir = Path(directory)
        manifest = json.loads((self.dir / "manifest.json").read_text())
        self.entries = {(e["M"], e["N"], e["K"]): e for e in manifest["kernels"]}
        self._kernels: dict = {}

    def _cubin(self, entry: dict) -> bytes:
        if entry.get("cubin") and (self.dir / entry["cubin"]).exists():
            return (self.dir / entry["cubin"]).read_bytes()
        with tempfile.TemporaryDirectory() as tmp:  # no cubin exported: compile the source now
            out = Path(tmp) / "k.cubin"
            subprocess.run(["nvcc", "-cubin", *entry["nvcc_flags"], "-o", str(out), str(self.dir / entry["file"])],
                           check=True, capture_output=True)
            return out.read_bytes()

    def kernel(self, M: int, N: int, K: int):
        key = (M, N, K)
        if key not in self._kernels:
            from evo.evaluation.gpu_launch import LoadedKernel
            e = self.entries[key]
            launch = {k: e[k] for k in ("grid", "block", "smem", "cluster", "tensor_maps")}
            self._kernels[key] = LoadedKernel(self._cubin(e), launch)
        return self._kernels[key]

    def supports(self, a, b) -> bool:
        import torch
        return (a.is_cuda and b.is_cuda and a.dtype == torch.float16 and b.dtype == torch.float16
                and a.dim() == 2 and b.dim() == 2 and a.shape[1] == b.shape[0] and a.is_contiguous()
                and b.is_contiguous() and a.data_ptr() % 16 == 0 and b.data_ptr() % 16 == 0
                and (a.shape[0], b.shape[1], a.shape[1]) in self.entries)

    def matmul(self, a, b, out=None):
        import torch
        if not self.supports(a, b):
            return torch.matmul(a, b, out=out) if out is not None else torch.matmul(a, b)
        M, K = a.shape
        N = b.shape[1]
        if out is None:
            out = torch.empty(M, N, dtype=torch.float16, device=a.device)
        k = self.kernel(M, N, K)
        k.launch(k.args(a.data_ptr(), b.data_ptr(), out.data_ptr(), M, N, K), torch.cuda.current_stream().cuda_stream)
        return out


def configure(directory: str | os.PathLike) -> Dispatcher:
    global _default
    _default = Dispatcher(directory)
    return _default


def matmul(a, b, out=None):
    """a @ b with the exported kernel for this shape, else torch.matmul."""
    if _default is None and os.environ.get("EVO_KERNELS"):
        configure(os.environ["EVO_KERNELS"])
    if _default is None:
        import torch
        return torch.matmul(a, b, out=out) if out is not None else torch.matmul(a, b)
    return _default.matmul(a, b, out=out)
