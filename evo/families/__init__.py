"""Seed kernel families: parametrized CUDA templates with a genome each.

A family has named parameters with their allowed values (`space`), constraints between them
(`problem(params)` says why a combination is invalid) and `render(params)`, which produces a
source that follows the kernel ABI and launch declaration. The templates are the `.cu` files
beside this module; `splitk.cuh` is pasted into sources that split K.

    simt    plain tiled CUDA-core kernel; correct for every shape (the fallback)
    ampere  mma.sync m16n8k16 + ldmatrix + cp.async pipeline, swizzled smem, split-K
    skinny  small M: the product transposed on mma.sync so tokens fill the 8-wide side, B streamed
    hopper  TMA + mbarrier pipeline + wgmma, warp-specialized, persistent, split-K (sm_90a)
"""
from evo.families._family import Family
from evo.families.ampere import AMPERE
from evo.families.hopper import HOPPER
from evo.families.simt import SIMT
from evo.families.skinny import SKINNY

FAMILIES: dict[str, Family] = {f.name: f for f in (SIMT, AMPERE, HOPPER, SKINNY)}

__all__ = ["FAMILIES", "Family", "SIMT", "AMPERE", "HOPPER", "SKINNY"]
