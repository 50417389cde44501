"""Worker side: load a cubin, build TMA tensor maps, launch through the driver API.

Launches go through cuda.bindings' cuLaunchKernelEx (cluster dimensions, tensor maps passed by
value) on whatever stream is current, so the same call is captured into CUDA graphs.
Imported only inside GPU worker processes.
"""
from __future__ import annotations

import ctypes
import functools
from typing import Any

from cuda.bindings import driver as cu

from evo.evaluation.launch_args import LaunchArgs

# Errors after which the CUDA context is unusable: the worker reports them, then restarts.
STICKY = {
    "CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_MISALIGNED_ADDRESS", "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_HARDWARE_STACK_ERROR", "CUDA_ERROR_INVALID_PC",
    "CUDA_ERROR_ASSERT", "CUDA_ERROR_LAUNCH_TIMEOUT", "CUDA_ERROR_ILLEGAL_STATE", "CUDA_ERROR_ECC_UNCORRECTABLE",
    "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_CONTEXT_IS_DESTROYED", "CUDA_ERROR_UNKNOWN",
    "CUDA_ERROR_TENSOR_MEMORY_LEAK", "CUDA_ERROR_MPS_SERVER_NOT_READY",
}


class CudaError(RuntimeError):
    def __init__(self, where: str, result):
        self.name = getattr(result, "name", f"CUresult {result}")
        if isinstance(result, cu.CUresult):
            _, text = cu.cuGetErrorString(result)
            self.text = text.decode() if isinstance(text, bytes) else str(text)
        else:  # a code this cuda.bindings does not know (a newer driver's)
            self.text = "an error code unknown to cuda.bindings"
        self.sticky = self.name in STICKY
        super().__init__(f"{where}: {self.name} ({self.text})")


def check(result_tuple, where: str):
    """cuda.bindings calls return (CUresult, *values); raise on error, return the values."""
    err, *values = result_tuple if isinstance(result_tuple, tuple) else (result_tuple,)
    if err != cu.CUresult.CUDA_SUCCESS:
        raise CudaError(where, err)
    return values[0] if len(values) == 1 else values


_SWIZZLE = {
    0: cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_NONE, 32: cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_32B,
    64: cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_64B, 128: cu.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
}


def encode_tensor_map(ptr: int, spec: dict):
    """A 2D fp16 row-major tensor map (dims inner-first), as the driver's CUtensorMap."""
    inner, outer = spec["dims"]
    box_inner, box_outer = spec["box"]
    return check(cu.cuTensorMapEncodeTiled(
        cu.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2, ptr,
        [cu.cuuint64_t(inner), cu.cuuint64_t(outer)], [cu.cuuint64_t(inner * 2)],
        [cu.cuuint32_t(box_inner), cu.cuuint32_t(box_outer)], [cu.cuuint32_t(1), cu.cuuint32_t(1)],
        cu.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE, _SWIZZLE[spec["swizzle"]],
        cu.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        cu.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE), f"tensor map of {spec['operand']}")


class TensorMaps:
    """A kernel's tensor maps (specs from its launch configuration). Each is encoded once; a copy
    placed elsewhere gets its own address from the driver's cuTensorMapReplaceAddress (which checks
    the alignment as encoding does), called through ctypes in place: about a microsecond, where
    encoding through cuda.bindings' objects takes several, and timing needs the maps of 8192 sets."""

    def __init__(self, specs: list[dict]):
        self.specs = specs
        self._templates: list[tuple[bytes, int] | None] = [None] * len(specs)
        self._replace: Any = None

    def template(self, j: int, ptr: int) -> tuple[bytes, int]:
        """Map j's 128 bytes and the address they hold: encoded for `ptr` the first time it is asked
        for, for that first address ever after (the correctness buffers', then the timing sets' ask)."""
        known = self._templates[j]
        if known is None:
            raw = (ctypes.c_ubyte * 128)()
            tmap = encode_tensor_map(ptr, self.specs[j])  # held while copied: getPtr() points into it
            ctypes.memmove(raw, tmap.getPtr(), 128)
            known = self._templates[j] = (bytes(raw), ptr)
        return known

    def readdress(self, where: int, j: int, ptr: int) -> None:
        """Give the copy of map j at `where` (64-byte aligned) the address `ptr`."""
        if self._replace is None:
            self._replace = ctypes.CDLL("libcuda.so.1").cuTensorMapReplaceAddress
            self._replace.argtypes, self._replace.restype = [ctypes.c_void_p, ctypes.c_void_p], ctypes.c_int
        err = self._replace(where, ptr)
        if err:
            raise CudaError(f"tensor map of {self.specs[j]['operand']}", _result(err))


def _result(code: int):
    try:
        return cu.CUresult(code)
    except Exception:  # a code this cuda.bindings does not know: CudaError names it by number
        return code


@functools.cache
def driver_takes_pdl() -> bool:
    """Whether the driver takes programmatic dependent launches (CUDA 12.3 on), as evo.dispatch checks."""
    return int(check(cu.cuDriverGetVersion(), "reading the driver version")) >= 12030


class LoadedKernel:
    """A module loaded from a cubin, with its launch configuration for one shape."""

    def __init__(self, cubin: bytes, launch: dict):
        self.launch_cfg = launch
        self._configs: dict[int, cu.CUlaunchConfig] = {}
        self._tensor_maps = TensorMaps(launch.get("tensor_maps", []))
        self.module = check(cu.cuModuleLoadData(cubin), "loading the cubin")
        self.function = check(cu.cuModuleGetFunction(self.module, b"hgemm"), "finding hgemm")
        smem = int(launch["smem"])
        if smem > 0:  # static + dynamic over 48 KiB needs the opt-in, so always declare it
            check(cu.cuFuncSetAttribute(
                self.function, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem),
                f"allowing {smem} bytes of dynamic shared memory")
        cluster = launch.get("cluster")
        if cluster and cluster[0] * cluster[1] * cluster[2] > 8:
            check(cu.cuFuncSetAttribute(
                self.function, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
                "allowing a non-portable cluster size")
        self.registers = check(cu.cuFuncGetAttribute(cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS,
                                                     self.function), "reading registers")

    def args(self, a: int, b: int, c: int, m: int, n: int, k: int, *, steps: tuple[int, int, int] = (0, 0, 0),
             count: int = 1, a_order: list[int] | None = None) -> LaunchArgs:
        """The parameters of one launch on (a, b, c), or of `count` launches on buffers `steps` bytes apart
        (launch i on A buffer a_order[i], where given)."""
        return LaunchArgs(self._tensor_maps, (a, b, c), steps, count, m, n, k, a_order=a_order)

    def launch(self, args: LaunchArgs, stream: int, i: int = 0) -> None:
        config = self._configs.get(stream)
        if config is None:  # one per stream: a graph capture issues thousands of launches
            config = self._configs[stream] = self._config(stream)
        check(cu.cuLaunchKernelEx(config, self.function, args.address(i), 0), "launching hgemm")

    def _config(self, stream: int):
        g, b = self.launch_cfg["grid"], self.launch_cfg["block"]
        config = cu.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = g
        config.blockDimX, config.blockDimY, config.blockDimZ = b
        config.sharedMemBytes = int(self.launch_cfg["smem"])
        config.hStream = cu.CUstream(stream)
        attrs = []
        cluster = self.launch_cfg.get("cluster")
        if cluster:
            attr = cu.CUlaunchAttribute()
            attr.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
            attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cluster
            attrs.append(attr)
        # evaluator.pdl, for a kernel whose PTX waits for the grid before it first (the harness clears the
        # flag on a driver older than CUDA 12.3, so that the archive records the launch as it ran)
        if self.launch_cfg.get("pdl"):
            attr = cu.CUlaunchAttribute()
            attr.id = cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
            attr.value.programmaticStreamSerializationAllowed = 1
            attrs.append(attr)
        if attrs:
            config.attrs = attrs
        config.numAttrs = len(attrs)
        return config

    def unload(self) -> None:
        cu.cuModuleUnload(self.module)


def synchronize(stream: int) -> None:
    check(cu.cuStreamSynchronize(cu.CUstream(stream)), "running hgemm")
