"""Build (once, cached) and load the C++ extension behind torch.ops.evo.matmul.

The source is evo_ops.cpp beside this file. torch.utils.cpp_extension compiles it with the local
C++ compiler against torch's headers and the CUDA toolkit's cuda.h, links the CUDA driver, and
caches the build (TORCH_EXTENSIONS_DIR, by default ~/.cache/torch_extensions): later processes load
it in well under a second. Where it cannot be built, `load()` returns None and `why_not()` says why
and what to install; evo.dispatch then sends every call to torch.
"""
from __future__ import annotations

import hashlib
import logging
import os
from pathlib import Path
from types import ModuleType

log = logging.getLogger(__name__)

SOURCE = Path(__file__).with_name("evo_ops.cpp")
_state: dict = {}


def _cuda_home() -> str | None:
    from torch.utils.cpp_extension import CUDA_HOME
    return CUDA_HOME


def _build() -> ModuleType:
    import torch
    from torch.utils.cpp_extension import load
    if not torch.cuda.is_available():
        raise RuntimeError("torch sees no CUDA GPU")
    home = _cuda_home()
    if not home or not (Path(home) / "include" / "cuda.h").exists():
        raise RuntimeError("no CUDA toolkit found (cuda.h): install one and set CUDA_HOME")
    # the source's hash in the name: an edited source is rebuilt, never mixed with an old build
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:10]
    libs = [p for p in (Path(home) / "lib64", Path(home) / "lib64" / "stubs", Path(home) / "lib" / "stubs",
                        Path(home) / "targets" / "x86_64-linux" / "lib" / "stubs")
            if p.is_dir()]
    module = load(name=f"evo_ops_{digest}", sources=[str(SOURCE)], with_cuda=True,
                  extra_cflags=["-O3"],
                  extra_ldflags=[*(f"-L{p}" for p in libs), "-lcuda"],
                  verbose=os.environ.get("EVO_EXT_VERBOSE") == "1")
    _register_fakes()
    return module


def _register_fakes() -> None:
    """Shapes without running anything, for torch.compile and meta tensors."""
    import torch

    @torch.library.register_fake("evo::matmul")
    def _matmul(a, b, handle):
        return a.new_empty((a.shape[0], b.shape[1]))

    @torch.library.register_fake("evo::matmul_out")
    def _matmul_out(a, b, handle, out):
        return None


def load() -> ModuleType | None:
    """The built extension (torch.ops.evo.* registered), or None where it cannot be built."""
    if "module" not in _state:
        try:
            _state["module"] = _build()
        except Exception as e:  # no compiler, no toolkit, no GPU, a failed build: torch runs instead
            _state["module"] = None
            _state["why"] = (f"the evo.dispatch extension could not be built ({type(e).__name__}: "
                             f"{str(e).strip().splitlines()[-1] if str(e).strip() else ''}); every matmul "
                             f"runs in torch. It needs a CUDA GPU, a C++ compiler and a CUDA toolkit "
                             f"(CUDA_HOME with include/cuda.h); EVO_EXT_VERBOSE=1 shows the build")
            log.warning(_state["why"])
    return _state["module"]


def why_not() -> str | None:
    """Why the extension is not available (None if it is, or was never asked for)."""
    return _state.get("why")
