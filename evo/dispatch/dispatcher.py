"""The Dispatcher of an export folder and the configured default (see evo.dispatch)."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from evo.core.dispatch_table import find, layout_verdict, why_unused
from evo.core.errors import EvoError
from evo.evaluation.cubin_calls import outside_calls

log = logging.getLogger(__name__)

_default: Dispatcher | None = None
FORMATS = ("evo-export/2",)
#: what evo.dispatch.Linear keeps for its torch path (see fallback_choice)
FALLBACK_WEIGHTS = ("auto", "keep", "drop")


class Dispatcher:
    """One export folder: its dispatch table, and (once used on a GPU) its C++ table handle.

    `checked=True` (the default) uses a range only where `evo export --verify` re-checked it on a GPU
    of this name; `checked=False` trusts the recorded speedups alone (what the re-check itself runs).
    `pdl=True` (the default) launches each kernel the export found waiting for the previous grid
    before anything else (its manifest entry's `pdl`, from the PTX: kernel.waits_first_in_ptx) as a
    programmatic dependent launch, so its launch overlaps the tail of the kernel before it on the
    stream; `pdl=False` launches every kernel plainly."""

    def __init__(self, directory: str | os.PathLike, *, checked: bool = True, pdl: bool = True):
        self.dir = Path(directory)
        manifest = json.loads((self.dir / "manifest.json").read_text())
        if manifest.get("format") not in FORMATS:
            raise EvoError(f"{self.dir}/manifest.json is format {manifest.get('format')!r}; this evo reads "
                           f"{', '.join(FORMATS)}: export it again with `evo export`")
        self.manifest = manifest
        self.tables: list[dict] = manifest["tables"]
        self.entries = {(e["M"], e["N"], e["K"]): e for e in manifest["kernels"]}
        self.kernels = {e["file"].removesuffix(".cu"): e for e in manifest["kernels"]}
        self.checked = checked
        self.pdl = pdl
        self.handle: int | None = None  # the C++ table, built on first use
        # (matmul(a, b, out, handle), linear(x, w_t, bias, handle, w=None)): the extension's entry points once
        # built (no per-call checks in Python: the C++ code routes, and falls back to torch itself;
        # torch.compile traces the operators instead, see extension.py), else torch's
        self._fns: tuple | None = None
        self.gpu: str | None = None  # the name of the GPU the C++ table was built for
        self.driver_pdl: bool | None = None  # whether this driver takes PDL launches (known once built)
        self.why_not_built: str | None = None  # why no table could be built, where the extension itself loaded
        self.unavailable: dict[str, str] = {}  # kernels that could not be had here, and why (their ranges run torch)

    def route(self, m: int, n: int, k: int, *, gpu: str | None = None) -> tuple[dict | None, str]:
        """(launch segment or None for torch, reason) for a call of shape (m, n, k) on `gpu`."""
        _, seg, reason = find(self.tables, m, n, k, gpu=gpu if self.checked else None)
        return seg, reason

    def serves(self, n: int, k: int) -> bool:
        """Whether some M of (n, k) runs an exported kernel here: a range with a launch that is in
        use on this GPU (re-checked on it, where checked). False where the extension is not
        available (torch runs every call). patch() replaces only the layers this is True for."""
        if self.build() is None:
            return False
        gpu = self.gpu if self.checked else None
        return any(rng["segments"] and not why_unused(rng, gpu) and rng["kernel"] not in self.unavailable
                   for t in self.tables if t["N"] == n and t["K"] == k for rng in t["ranges"])

    def slower_layout(self, n: int, k: int) -> tuple[bool | None, str]:
        """Whether torch on W.T [K, N] was re-checked slower than on nn.Linear's W [N, K] for (n, k)
        on this GPU (where checked; the GPU is known once the extension is built), with why; None
        where that is not known (dispatch_table.layout_verdict)."""
        table = next((t for t in self.tables if t["N"] == n and t["K"] == k), None)
        if table is None:
            return None, f"no kernel was exported for N={n}, K={k}"
        return layout_verdict(table, self.gpu if self.checked else None)

    def launches_pdl(self, entry: dict) -> bool:
        """Whether this kernel is launched as a programmatic dependent (see the class docstring; an
        export without the check, or a driver older than CUDA 12.3, launches plainly)."""
        return self.pdl and entry.get("pdl") is True and self.driver_pdl is not False

    def _cubin(self, entry: dict) -> bytes:
        """The kernel's cubin: the exported one, else compiled from its source now; refused (EvoError) where
        it calls the device runtime (printf and the like: evo.evaluation.cubin_calls), as evo export does."""
        cubin = self._exported_or_compiled(entry)
        refused = outside_calls(cubin, unreadable_ok=True)
        if refused:
            raise EvoError(f"{entry['file']}: {refused}")
        return cubin

    def _exported_or_compiled(self, entry: dict) -> bytes:
        if entry.get("cubin") and (self.dir / entry["cubin"]).exists():
            return (self.dir / entry["cubin"]).read_bytes()
        from evo.dispatch.extension import _cuda_home
        home = _cuda_home()  # the toolkit the extension builds with: nvcc need not be on PATH
        nvcc = str(Path(home) / "bin" / "nvcc") if home and (Path(home) / "bin" / "nvcc").exists() else "nvcc"
        with tempfile.TemporaryDirectory() as tmp:  # no cubin exported: compile the source now
            out = Path(tmp) / "k.cubin"
            done = subprocess.run([nvcc, "-cubin", *entry["nvcc_flags"], "-o", str(out), str(self.dir / entry["file"])],
                                  capture_output=True, text=True)
            if done.returncode:
                raise EvoError(f"nvcc failed on {entry['file']}: {(done.stderr or done.stdout).strip()[-800:]}")
            return out.read_bytes()

    def build(self) -> int | None:
        """The C++ table handle (built and loaded on the current device on first call), or None when
        the extension is not available (then torch runs every call; extension.why_not() says why)."""
        if self.handle is not None or self.why_not_built:
            return self.handle
        from evo.dispatch import extension
        ext = extension.load()
        if ext is None:
            return None
        import torch
        compiling = getattr(getattr(torch, "compiler", None), "is_compiling", lambda: False)()
        if compiling or torch.cuda.is_current_stream_capturing():
            raise EvoError("evo.dispatch: the first call came inside a CUDA graph capture or torch.compile, where "
                           "its kernels cannot be loaded: call evo.dispatch.configure(folder) (which loads them) or "
                           "Dispatcher.build() before capturing or compiling")
        device = torch.cuda.current_device()
        self.gpu = torch.cuda.get_device_name(device)
        handle = ext.new_table()
        index: dict[str, int | None] = {}  # None: the kernel could not be had here (its ranges run torch)
        for table in self.tables:
            for rng in table["ranges"]:
                if why_unused(rng, self.gpu if self.checked else None) or not rng["segments"]:
                    continue
                if rng["kernel"] not in index:
                    segs = rng["segments"]
                    big = any(s["cluster"] and s["cluster"][0] * s["cluster"][1] * s["cluster"][2] > 8 for s in segs)
                    entry = self.kernels[rng["kernel"]]
                    try:
                        cubin = self._cubin(entry)
                    except (OSError, EvoError) as e:
                        log.warning(f"evo.dispatch: kernel {rng['kernel']} ({entry['file']}) is not available, "
                                    f"its ranges run torch: {e}")
                        index[rng["kernel"]] = None
                        self.unavailable[rng["kernel"]] = str(e)
                        continue
                    # an entry without `reentrant` (an older export) is taken as not reentrant: the safe side
                    index[rng["kernel"]] = ext.add_kernel(handle, cubin, max(s["smem"] for s in segs), big,
                                                          self.launches_pdl(entry), entry.get("reentrant") is True)
                k = index[rng["kernel"]]
                if k is None:
                    continue
                for s in rng["segments"]:
                    ext.add_segment(handle, table["N"], table["K"], s["m_lo"], s["m_hi"], k, launch_values(s))
        try:
            ext.preload(handle, device)  # module loads cannot happen inside a CUDA-graph capture
        except RuntimeError as e:  # a cubin this GPU or driver cannot load (an export made for another)
            # no table here: warned once, remembered (explain says why), not raised at every call
            self.why_not_built = (f"evo.dispatch: the kernels of {self.dir} could not be loaded on {self.gpu} "
                                  f"({str(e).strip()[:300]}); every matmul runs in torch. Export and re-check "
                                  f"(evo export --verify) on this GPU")
            log.warning(self.why_not_built)
            return None
        self.driver_pdl = bool(ext.driver_has_pdl())
        self.handle = handle
        return handle

    def functions(self) -> tuple:
        """(matmul(a, b, out, handle), linear(x, w_t, bias, handle, w=None)) for `self.handle`: the C++ entry
        points (built on first call), or torch's where the extension is not available."""
        if self._fns is None:
            if self.build() is None:
                self._fns = (torch_matmul, torch_linear)
            else:
                from evo.dispatch import extension
                ext = extension.load()
                assert ext is not None  # build() returned a handle
                self._fns = (ext.matmul, ext.linear)
        return self._fns

    def matmul(self, a, b, out=None):
        return (self._fns or self.functions())[0](a, b, out, self.handle)

    def explain(self, a, b) -> str:
        """Which path `matmul(a, b)` takes and why, in one line ('evo: ...' or 'torch: ...')."""
        problem = tensor_problem(a, b)
        if problem:
            return f"torch: {problem}"
        from evo.dispatch import extension
        if self.build() is None:
            return f"torch: {self.why_not_built or extension.why_not()}"
        rng, seg, reason = find(self.tables, a.shape[0], b.shape[1], a.shape[1], gpu=self.gpu if self.checked else None)
        if rng is None or seg is None:
            return f"torch: {reason}"
        if rng["kernel"] in self.unavailable:
            return f"torch: kernel {rng['kernel']} is not available here ({self.unavailable[rng['kernel']][:300]})"
        pdl = " (programmatic dependent launch)" if self.launches_pdl(self.kernels[rng["kernel"]]) else ""
        return (f"evo: {reason}; launch grid {seg['grid']} block {seg['block']} for M {seg['m_lo']}-{seg['m_hi']}"
                f"{pdl}")


# What runs where the extension is not available, with the C++ entry points' signatures.
def torch_matmul(a, b, out, handle):
    import torch
    return torch.matmul(a, b) if out is None else torch.matmul(a, b, out=out)


def torch_linear(x, w_t, bias, handle, w=None):
    import torch.nn.functional as F
    return F.linear(x, w_t.t() if w is None else w, bias)  # w: nn.Linear's own [N, K], where kept


def fallback_choice(mode: str, dispatcher: Dispatcher | None, n: int, k: int) -> tuple[str, str]:
    """What evo.dispatch.Linear of (n, k) keeps for its torch path: ('keep', why) keeps nn.Linear's
    W [N, K] beside W.T (the torch path then runs exactly nn.Linear's ops, at twice the weight's
    memory); ('drop', why) and ('unknown', why) keep W.T alone. `mode`: 'keep' or 'drop' decide;
    'auto' keeps W where the export's re-check found torch slower on W.T at some M it serves, and
    keeps one copy where no such re-check is known (most shapes measured so far are within noise;
    doubling every layer's memory on no evidence is the larger cost)."""
    if mode not in FALLBACK_WEIGHTS:
        raise EvoError(f"fallback_weight={mode!r}: use one of {', '.join(map(repr, FALLBACK_WEIGHTS))} ('auto' "
                       f"decides per (N, K) from `evo export --verify`)")
    if mode != "auto":
        return mode, f"fallback_weight={mode!r}"
    if dispatcher is None:
        return "unknown", "no export configured: nothing says which torch layout is faster"
    slower, why = dispatcher.slower_layout(n, k)
    return {True: "keep", False: "drop", None: "unknown"}[slower], why


def launch_values(seg: dict) -> list[int]:
    """A launch segment as the flat list the C++ table takes: grid, block, smem, cluster (0s for
    none), then operand (0=A, 1=B, 2=C), box inner, box outer and swizzle of each tensor map."""
    values = [*seg["grid"], *seg["block"], seg["smem"], *(seg["cluster"] or (0, 0, 0))]
    for t in seg["tensor_maps"]:
        values += ["ABC".index(t["operand"]), t["box"][0], t["box"][1], t["swizzle"]]
    return values


def tensor_problem(a: Any, b: Any) -> str | None:
    """Why the kernels cannot take these tensors (None if they can): the checks torch.ops.evo.matmul
    makes before routing, in words."""
    for name, x in (("a", a), ("b", b)):
        if not x.is_cuda:
            return f"{name} is not a CUDA tensor"
        if str(x.dtype) != "torch.float16":
            return f"{name} is {x.dtype}, the kernels take torch.float16"
        if x.dim() != 2:
            return f"{name} has {x.dim()} dimensions, the kernels take 2 (evo.dispatch.Linear flattens batch dims)"
        if not x.is_contiguous():
            return (f"{name} is not contiguous (a transposed weight? evo.dispatch.Linear stores W.T contiguous "
                    f"once)")
        if x.data_ptr() % 16:
            return f"{name} is not 16-byte aligned"
    if a.device != b.device:
        return f"a is on {a.device}, b on {b.device}"
    if a.shape[1] != b.shape[0]:
        return f"a is {tuple(a.shape)}, b {tuple(b.shape)}: inner dimensions differ"
    if getattr(a, "requires_grad", False) or getattr(b, "requires_grad", False):
        import torch
        if torch.is_grad_enabled():
            return "an input needs a gradient (the kernels have no backward)"
    dtype = _autocast_dtype()
    if dtype is not None:
        return f"torch.autocast to {dtype} is on (torch returns {dtype}, the kernels float16)"
    return None


def _autocast_dtype() -> str | None:
    """The dtype torch.autocast casts CUDA matmuls to, where it is on and not float16."""
    try:
        import torch
        if torch.is_autocast_enabled("cuda") and torch.get_autocast_dtype("cuda") != torch.float16:
            return str(torch.get_autocast_dtype("cuda")).removeprefix("torch.")
    except (ImportError, TypeError, AttributeError):  # no torch, or one older than 2.4
        pass
    return None


def configure(directory: str | os.PathLike, *, checked: bool = True, pdl: bool = True) -> Dispatcher:
    """Use the export in `directory` for evo.dispatch's calls. Where torch sees a CUDA GPU, the extension
    is built (the first time, about a minute; cached after) and the kernels loaded now, not at the first
    call: that call may come inside a CUDA graph capture or torch.compile, where they cannot be."""
    global _default
    _default = Dispatcher(directory, checked=checked, pdl=pdl)
    try:
        import torch
        cuda = torch.cuda.is_available()
    except ImportError:
        cuda = False
    if cuda:
        _default.functions()
    return _default


def default() -> Dispatcher | None:
    """The configured dispatcher (configure() or EVO_KERNELS), or None."""
    if _default is None and os.environ.get("EVO_KERNELS"):
        configure(os.environ["EVO_KERNELS"])
    return _default


def matmul(a, b, out=None):
    """a @ b with the exported kernel for this shape where it is faster, else torch.matmul."""
    d = _default or default()
    if d is None:
        import torch
        return torch.matmul(a, b, out=out) if out is not None else torch.matmul(a, b)
    return d.matmul(a, b, out)


def explain(a, b) -> str:
    """Which path `matmul(a, b)` takes and why ('evo: ...' or 'torch: ...')."""
    d = default()
    if d is None:
        return "torch: no export configured (evo.dispatch.configure(folder) or EVO_KERNELS=folder)"
    return d.explain(a, b)
