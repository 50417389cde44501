"""Build (once, cached) and load the C++ extension behind torch.ops.evo.matmul.

The source is evo_ops.cpp beside this file. torch.utils.cpp_extension compiles it with the local
C++ compiler against torch's headers and the CUDA toolkit's cuda.h (the driver, libcuda.so.1, is
opened at run time, so no libcuda.so is needed to link), and caches the build
(TORCH_EXTENSIONS_DIR, by default ~/.cache/torch_extensions): later processes load it in well
under a second. Without ninja (which cpp_extension.load needs) the same build is one compiler call.
Where it cannot be built, `load()` returns None and `why_not()` says why and what to install;
evo.dispatch then sends every call to torch.
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
    """The CUDA toolkit's root: the first of CUDA_HOME, CUDA_PATH, torch's guess, /usr/local/cuda
    that has include/cuda.h (torch guesses from nvcc's folder, which a wrapper script can mislead)."""
    from torch.utils.cpp_extension import CUDA_HOME
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), CUDA_HOME, "/usr/local/cuda"):
        if home and (Path(home) / "include" / "cuda.h").exists():
            return home
    return None


def _build() -> ModuleType:
    import torch
    from torch.utils import cpp_extension
    if not torch.cuda.is_available():
        raise RuntimeError("torch sees no CUDA GPU")
    home = _cuda_home()
    if not home:
        raise RuntimeError("no CUDA toolkit found (include/cuda.h): install one and set CUDA_HOME")
    # the source's hash in the name: an edited source is rebuilt, never mixed with an old build
    name = f"evo_ops_{hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:10]}"
    # the driver (libcuda) is opened at run time by the extension itself: only the runtime is linked
    libs = [p for p in (Path(home) / "lib64", Path(home) / "targets" / "x86_64-linux" / "lib") if p.is_dir()]
    if cpp_extension.is_ninja_available():
        module = cpp_extension.load(name=name, sources=[str(SOURCE)], with_cuda=True, extra_cflags=["-O3"],
                                    extra_include_paths=[f"{home}/include"],
                                    extra_ldflags=[*(f"-L{p}" for p in libs), "-ldl"],
                                    verbose=os.environ.get("EVO_EXT_VERBOSE") == "1")
    else:
        module = _build_without_ninja(name, home, libs)
    _register_fakes()
    try:
        _register_substitutes(module)
    except Exception as e:  # eager calls do not need them: only torch.compile loses the traced path
        log.warning(f"evo.dispatch: torch.compile will break the graph at evo.dispatch calls ({type(e).__name__}: "
                    f"{e}); eager calls and CUDA graphs are not affected")
    return module


def _build_without_ninja(name: str, home: str, libs: list[Path]) -> ModuleType:
    """The same build as cpp_extension.load, with one compiler call (no ninja on the machine)."""
    import importlib.util
    import subprocess
    import sysconfig

    import torch
    from torch.utils import cpp_extension as ce
    folder = Path(os.environ.get("TORCH_EXTENSIONS_DIR", Path.home() / ".cache" / "torch_extensions")) / name
    so = folder / f"{name}.so"
    if not so.exists():
        folder.mkdir(parents=True, exist_ok=True)
        std = "-std=c++20" if "-std=c++20" in Path(ce.__file__).read_text() else "-std=c++17"  # as torch builds
        abi = [f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}"]
        abi += getattr(ce, "_get_pybind11_abi_build_flags", list)()
        torch_libs = [str(Path(torch.__file__).parent / "lib")]
        cmd = [os.environ.get("CXX", "c++"), "-O3", "-shared", "-fPIC", std, *abi, f"-DTORCH_EXTENSION_NAME={name}",
               "-DTORCH_API_INCLUDE_EXTENSION_H", *(f"-I{p}" for p in ce.include_paths()),
               f"-I{sysconfig.get_paths()['include']}", f"-I{home}/include", str(SOURCE), "-o", str(so) + ".tmp",
               *(f"-L{p}" for p in [*torch_libs, *libs]), *(f"-Wl,-rpath,{p}" for p in torch_libs),
               "-lc10", "-lc10_cuda", "-ltorch", "-ltorch_cpu", "-ltorch_cuda", "-ltorch_python", "-lcudart", "-ldl"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"{cmd[0]} failed: {done.stderr.strip()[-2000:]}")
        Path(str(so) + ".tmp").rename(so)
    spec = importlib.util.spec_from_file_location(name, so)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _register_fakes() -> None:
    """Shapes without running anything, for torch.compile and meta tensors."""
    import torch

    @torch.library.register_fake("evo::matmul")
    def _matmul(a, b, handle):  # the kernels' (M, N) or, where at::matmul runs, whatever it returns
        return torch.matmul(a, b)

    @torch.library.register_fake("evo::matmul_out")
    def _matmul_out(a, b, handle, out):
        return None

    @torch.library.register_fake("evo::linear")
    def _linear(x, w_t, bias, handle, w=None):
        return x.new_empty((*x.shape[:-1], w_t.shape[1]))


def _register_substitutes(module: ModuleType) -> None:
    """What torch.compile traces in place of the pybind entry points (module.linear, module.matmul),
    which eager code calls directly (no dispatcher: see evo_ops.cpp): the operators themselves, with
    their fake implementations, so a compiled model has no graph break. Where a gradient is needed
    torch's differentiable ops run, as the C++ code does eagerly."""
    import torch
    import torch.nn.functional as F
    substitute = getattr(torch.compiler, "substitute_in_graph", None)
    if substitute is None:  # torch < 2.5: eager calls still work; torch.compile breaks the graph there
        log.warning("this torch has no torch.compiler.substitute_in_graph: a compiled model breaks its graph "
                    "at each evo.dispatch call (torch 2.5 or newer traces them)")
        return

    # the overloads themselves, not torch.ops.evo.*: dynamo cannot trace the torch.ops namespace from here
    linear_op, matmul_op, matmul_out_op = (torch.ops.evo.linear.default, torch.ops.evo.matmul.default,
                                           torch.ops.evo.matmul_out.default)

    def autocast_elsewhere() -> bool:  # as evo_ops.cpp: under autocast to bf16 torch runs (and returns bf16)
        return torch.is_autocast_enabled("cuda") and torch.get_autocast_dtype("cuda") != torch.float16

    @substitute(module.linear, skip_signature_check=True)
    def _linear(x, w_t, bias, handle, w=None):
        if (torch.is_grad_enabled() and (x.requires_grad or w_t.requires_grad or (bias is not None and bias.requires_grad)
                                         or (w is not None and w.requires_grad))) or autocast_elsewhere():
            return F.linear(x, w_t.t() if w is None else w, bias)
        return linear_op(x, w_t, bias, handle, w)

    @substitute(module.matmul, skip_signature_check=True)
    def _matmul(a, b, out, handle):
        if (torch.is_grad_enabled() and (a.requires_grad or b.requires_grad)) or autocast_elsewhere():  # no backward
            return torch.matmul(a, b) if out is None else torch.matmul(a, b, out=out)
        if out is None:
            return matmul_op(a, b, handle)
        matmul_out_op(a, b, handle, out)
        return out


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
