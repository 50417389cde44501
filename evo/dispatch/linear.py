"""`evo.dispatch.Linear`: nn.Linear's `x @ W.T + bias` on exported kernels, and `patch(model)`.

nn.Linear stores W as [out, in] = [N, K]; the kernels take B row-major [K, N]. Linear stores
W.T contiguous once, when it is made (the original weight is not kept), so no call transposes.
A call is one call into C++ (the extension's `linear`, torch.ops.evo.linear under torch.compile):
it flattens any leading batch dims to M rows, routes, and launches the kernel (then adds the bias
in place) or runs torch's addmm/mm as nn.Linear does. Where x needs a gradient torch computes it:
the kernels have no backward. The dispatcher (and its C++ table) is fixed when the layer is made.
"""
from __future__ import annotations

import torch

from evo.core.errors import EvoError
from evo.dispatch.dispatcher import Dispatcher, default, torch_linear


class Linear(torch.nn.Module):
    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None,
                 dispatcher: Dispatcher | None = None):
        super().__init__()
        self.dispatcher = dispatcher or default()  # None: torch runs every call (nothing configured)
        self.out_features, self.in_features = weight.shape
        self.register_buffer("weight_t", weight.detach().t().contiguous())  # [K, N] row-major
        self.register_buffer("bias", None if bias is None else bias.detach().clone())
        # the C++ entry point and its table, looked up once: forward does no Python work of its own
        self._linear = self.dispatcher.functions()[1] if self.dispatcher else torch_linear
        self._handle = self.dispatcher.handle if self.dispatcher else None

    @classmethod
    def from_linear(cls, layer: torch.nn.Linear, dispatcher: Dispatcher | None = None) -> Linear:
        return cls(layer.weight, layer.bias, dispatcher)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._linear(x, self.weight_t, self.bias, self._handle)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


def patch(model: torch.nn.Module, dispatcher: Dispatcher | None = None) -> list[str]:
    """Replace, in place, every nn.Linear whose (out, in) = (N, K) has an exported table by an
    evo.dispatch.Linear (the weight moves to the kernels' layout once). Returns the replaced names."""
    d = dispatcher or default()
    if d is None:
        raise EvoError("no export configured: call evo.dispatch.configure(folder) (or set "
                                    "EVO_KERNELS=folder) before patch(model)")
    exported = {(t["N"], t["K"]) for t in d.tables}
    replaced = []
    for name, module in list(model.named_modules()):
        for child_name, child in list(module.named_children()):
            if type(child) is torch.nn.Linear and (child.out_features, child.in_features) in exported:
                setattr(module, child_name, Linear.from_linear(child, dispatcher))
                replaced.append(f"{name}.{child_name}" if name else child_name)
    return replaced
