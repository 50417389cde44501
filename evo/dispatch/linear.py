"""`evo.dispatch.Linear`: nn.Linear's `x @ W.T + bias` on exported kernels, and `patch(model)`.

nn.Linear stores W as [out, in] = [N, K]; the kernels take B row-major [K, N]. Linear stores
W.T contiguous once, when it is made, so no call transposes, and keeps the original W only where
its torch path needs it (below). A call is one call into C++ (the extension's `linear`,
torch.ops.evo.linear under torch.compile): it flattens any leading batch dims to M rows, routes, and
launches the kernel (then adds the bias in place) or runs torch's addmm/mm as nn.Linear does. Where
x needs a gradient torch computes it: the kernels have no backward. The dispatcher (and its C++
table) is fixed when the layer is made.

Never slower, eagerly too: what the torch path (an M no kernel serves) costs beside nn.Linear.
- Layers that no kernel would serve are not replaced: `patch` keeps an nn.Linear whose (N, K) has no
  range in use on this GPU (every range re-checked slower than torch, or none re-checked here), and
  replaces nothing where the extension cannot be built. Those layers pay nothing at all.
- A replaced layer's torch path is one pybind call (no torch.ops boxing) that routes in C++ (a hash
  lookup and a binary search) and calls at::mm/addmm on the flattened x: fewer operator calls than
  nn.Linear's F.linear (linear -> t -> matmul -> reshape -> mm -> _unsafe_view). forward reads the
  weight and bias from `_buffers` directly (nn.Module.__getattr__ is a Python call per attribute,
  which nn.Linear pays twice per call). A Python-side check of M against the covered ranges before
  entering C++ was not added: computing M in Python costs more than the C++ routing it would skip.
- Weight layout, decided per (N, K) by measurement: the torch path on W.T [K, N] is cuBLAS NN where
  nn.Linear's W [N, K] is TN. On the H200 (torch 2.11, CUDA 13) NN was within noise on most shapes
  but 13% slower at M=65 of 6144x4096 (15.7 vs 13.9 us) and ~5% at M=1 of 4096x14336. So
  `evo export --verify` times both layouts per (N, K) at the Ms torch serves there (the gaps between
  the ranges in use and the M above the last; graph-timed, the same noise rule as a kernel against
  torch) and records `torch_layout` in the table. `fallback_weight` then chooses per layer:
  'auto' (default) keeps W [N, K] beside W.T where that record says [K, N] is slower beyond noise at
  some M, so the torch path runs exactly nn.Linear's ops (`addmm(bias, x, W.t())`/`mm(x, W.t())`,
  bit for bit); 'keep' always does (never slower than nn.Linear by construction); 'drop' never does
  (least memory). Keeping W costs the layer's weight a second time; `patch` logs which layers do and
  the bytes, and `memory_report(model)` returns them. An export re-checked before the layout was
  (no record), or on another GPU, is 'unknown': 'auto' keeps W.T alone and says so (most shapes
  measured were within noise, and doubling every layer's memory on no evidence is the larger cost;
  re-run `evo export --verify` to decide, or ask for 'keep').
"""
from __future__ import annotations

import logging

import torch

from evo.core.errors import EvoError
from evo.dispatch.dispatcher import Dispatcher, default, fallback_choice, torch_linear

log = logging.getLogger(__name__)


class Linear(torch.nn.Module):
    """nn.Linear on exported kernels. `fallback_weight`: 'auto' (keep W [N, K] beside W.T where the
    export's re-check found the torch path slower on W.T), 'keep' (always: never slower than
    nn.Linear by construction, twice the weight memory) or 'drop' (W.T alone, least memory)."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None,
                 dispatcher: Dispatcher | None = None, fallback_weight: str = "auto"):
        super().__init__()
        self.dispatcher = dispatcher or default()  # None: torch runs every call (nothing configured)
        self.out_features, self.in_features = weight.shape
        self.register_buffer("weight_t", weight.detach().t().contiguous())  # [K, N] row-major
        self.register_buffer("bias", None if bias is None else bias.detach().clone())
        # the C++ entry point and its table, looked up once: forward does no Python work of its own
        self._linear = self.dispatcher.functions()[1] if self.dispatcher else torch_linear
        self._handle = self.dispatcher.handle if self.dispatcher else None
        self.fallback, self.fallback_reason = fallback_choice(fallback_weight, self.dispatcher, *weight.shape)
        # nn.Linear's own [N, K] for the torch path, or None (then torch multiplies by weight_t)
        self.register_buffer("weight", weight.detach().clone() if self.fallback == "keep" else None)

    @classmethod
    def from_linear(cls, layer: torch.nn.Linear, dispatcher: Dispatcher | None = None,
                    fallback_weight: str = "auto") -> Linear:
        return cls(layer.weight, layer.bias, dispatcher, fallback_weight)

    @property
    def extra_bytes(self) -> int:
        """The memory this layer holds beyond nn.Linear's: the second copy of the weight, or 0."""
        w = self._buffers["weight"]
        return 0 if w is None else w.numel() * w.element_size()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b = self._buffers  # plain dict reads: no nn.Module.__getattr__ call per tensor
        return self._linear(x, b["weight_t"], b["bias"], self._handle, b["weight"])

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}, "
                f"fallback_weight={self.fallback!r} (+{self.extra_bytes} bytes)")


def patch(model: torch.nn.Module, dispatcher: Dispatcher | None = None, *, fallback_weight: str = "auto") -> list[str]:
    """Replace, in place, every nn.Linear whose (out, in) = (N, K) has an exported range in use on
    this GPU by an evo.dispatch.Linear (the weight moves to the kernels' layout once; `fallback_weight`
    as in Linear). A layer whose table has no such range (all re-checked slower than torch, or not
    re-checked on this GPU) stays nn.Linear, as do all where the extension is not available. Returns
    the replaced names; logs which of them keep their weight twice, and the bytes that costs
    (memory_report)."""
    d = dispatcher or default()
    if d is None:
        raise EvoError("no export configured: call evo.dispatch.configure(folder) (or set "
                                    "EVO_KERNELS=folder) before patch(model)")
    served = {(t["N"], t["K"]) for t in d.tables if d.serves(t["N"], t["K"])}
    replaced = []
    for name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            if type(child) is torch.nn.Linear and (child.out_features, child.in_features) in served:
                setattr(module, child_name, Linear.from_linear(child, dispatcher, fallback_weight))
                replaced.append(f"{name}.{child_name}" if name else child_name)
    report = memory_report(model)
    # a second copy, or a layout nobody measured, is worth a warning: the user may want the other mode
    level = logging.WARNING if fallback_weight == "auto" and (report["keep"] or report["unknown"]) else logging.INFO
    log.log(level, f"evo.dispatch.patch: replaced {len(replaced)} nn.Linear; {report['summary']}")
    return replaced


def memory_report(model: torch.nn.Module) -> dict:
    """The evo.dispatch.Linear layers of a model by what they keep for the torch path: 'keep' (W [N, K]
    beside W.T) with each one's extra bytes, 'drop' and 'unknown' (W.T alone), their reasons, the
    total extra bytes, and a one-line summary."""
    report: dict = {"keep": {}, "drop": [], "unknown": [], "reasons": {}, "extra_bytes": 0}
    for name, layer in model.named_modules():
        if isinstance(layer, Linear):
            report["reasons"][name] = layer.fallback_reason
            if layer.fallback == "keep":
                report["keep"][name] = layer.extra_bytes
            else:
                report[layer.fallback].append(name)
    report["extra_bytes"] = sum(report["keep"].values())
    report["summary"] = _summary(report)
    return report


def _summary(report: dict) -> str:
    keep = report["keep"]
    why_keep = f": {', '.join(keep)}; fallback_weight='drop' saves it, at the torch path's speed on W.T" if keep else ""
    parts = [f"{len(keep)} evo.dispatch.Linear keep W [N, K] beside W.T for the torch path "
             f"(+{report['extra_bytes'] / 2**20:.1f} MiB{why_keep})", f"{len(report['drop'])} keep W.T alone"]
    if report["unknown"]:
        parts.append(f"{len(report['unknown'])} keep W.T alone without knowing which torch layout is faster "
                     f"({report['reasons'][report['unknown'][0]]}; fallback_weight='keep' is never slower)")
    return "; ".join(parts)
