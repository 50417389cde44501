"""Worker side: one (kernel, shape) evaluation on the GPU, and the libraries beside it.

Correctness (docs/correctness.md): fresh random normal inputs for every draw, an fp32-accumulated
reference, the output poisoned with NaN before each launch, guard zones around every buffer
and A/B compared with copies after the launch; repeated after timing with new inputs.
Timing: graph replays in hot and rotating modes, isolated launches in server mode; the libraries
are timed by the same code on the same buffers in the same process.
Imported only inside GPU worker processes.
"""
from __future__ import annotations

import math
from collections.abc import Callable

import torch

from evo.core.records import DeviceInfo, KernelResult, Status
from evo.evaluation import gpu_baselines, steps
from evo.evaluation.faults import ContextLost, is_cuda_error
from evo.evaluation.gpu_buffers import Guarded, TimingSets, fresh_generator, reference
from evo.evaluation.gpu_launch import CudaError, LoadedKernel, driver_takes_pdl, synchronize
from evo.evaluation.gpu_timing import ClockReader
from evo.evaluation.tolerance import error_stats, verdict


class GpuHarness:
    def __init__(self):
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        torch.zeros(1, device="cuda")  # create torch's (primary) context first
        self.info = self._device_info()
        self.stream = torch.cuda.Stream()
        # the health check's own element, allocated once: see healthy()
        self._alive = torch.zeros(1, dtype=torch.int32, device="cuda")
        self.clock = ClockReader(self.info.uuid)
        self.info = DeviceInfo(**{**self.info.__dict__, "max_sm_clock_mhz": self.clock.max_mhz})

    @staticmethod
    def _device_info() -> DeviceInfo:
        props = torch.cuda.get_device_properties(0)
        attrs = {}
        try:  # pycuda shares torch's primary context; read the attributes through it
            import pycuda.autoprimaryctx  # noqa: F401
            import pycuda.driver as drv
            attrs = drv.Context.get_device().get_attributes()
            num_sms = int(attrs[drv.device_attribute.MULTIPROCESSOR_COUNT])
            l2 = int(attrs[drv.device_attribute.L2_CACHE_SIZE])
            smem = int(attrs[drv.device_attribute.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN])
        except Exception:
            num_sms = props.multi_processor_count
            l2 = int(getattr(props, "L2_cache_size", 50 * 2**20))
            smem = int(getattr(props, "shared_memory_per_block_optin", 232448))
        uuid = str(getattr(props, "uuid", "unknown"))
        return DeviceInfo(name=props.name, uuid=uuid, num_sms=num_sms, l2_bytes=l2, smem_per_block_optin=smem,
                          memory_bytes=int(props.total_memory),
                          extra={"torch": torch.__version__, "pycuda": bool(attrs),
                                 "capability": f"{props.major}.{props.minor}"})

    def peaks(self):
        return gpu_baselines.peaks(self)

    # ---- one evaluation -------------------------------------------------------------------
    def evaluate(self, req: dict, progress: Callable[[str], None]) -> dict:
        M, N, K = req["shape"]
        gpu = self.info.key
        kernel = None
        out: dict = {"libraries": []}
        if (req.get("launch") or {}).get("pdl") and not driver_takes_pdl():  # recorded as launched: plainly
            req = {**req, "launch": {**req["launch"], "pdl": False}}

        def fail(status: Status, error: str, **kw) -> dict:
            out["kernel"] = KernelResult(status, error, backend="gpu", gpu=gpu, launch=req.get("launch"), **kw).to_json()
            return out

        try:
            if req.get("cubin") is not None:
                try:
                    with steps.step("load module"):
                        kernel = LoadedKernel(req["cubin"], req["launch"])
                except CudaError as e:
                    if e.sticky:
                        raise
                    return fail(Status.LAUNCH_ERROR, f"the module could not be loaded or configured: {e}")
                result = self._evaluate_kernel(kernel, M, N, K, req, progress)
                out["kernel"] = result.to_json()
                ok = result.status == Status.OK
            else:
                ok = True
            if ok and req.get("libraries") and req["modes"]:
                out["libraries"] = [r.to_json() for r in gpu_baselines.measure(
                    self, M, N, K, req["libraries"], req["modes"], req, progress)]
            return out
        except CudaError as e:
            if e.sticky:
                raise ContextLost(KernelResult(Status.FAULT, f"the kernel faulted: {e}", backend="gpu", gpu=gpu,
                                               launch=req.get("launch"))) from e
            return fail(Status.LAUNCH_ERROR, str(e))
        except torch.cuda.OutOfMemoryError as e:
            return fail(Status.WORKER_ERROR, f"out of GPU memory in the harness: {e}")
        except ContextLost:
            raise
        except Exception as e:  # torch's AcceleratorError, cuda.bindings, anything: the context decides
            if is_cuda_error(e) or not self.healthy():
                raise ContextLost(KernelResult(Status.FAULT, f"the kernel faulted: {_first_line(e)}",
                                               backend="gpu", gpu=gpu, launch=req.get("launch"))) from e
            raise
        finally:
            self._clean_up(kernel, req)

    def _clean_up(self, kernel: LoadedKernel | None, req: dict) -> None:
        """Unload the module and release memory; an error here (a late fault) is the kernel's."""
        try:
            with steps.step("clean up"):
                if kernel is not None:
                    kernel.unload()
                torch.cuda.empty_cache()
                torch.cuda.synchronize()
        except Exception as e:
            raise ContextLost(KernelResult(Status.FAULT, f"the kernel faulted (noticed while cleaning up): "
                                           f"{_first_line(e)}", backend="gpu", gpu=self.info.key,
                                           launch=req.get("launch"))) from e

    def healthy(self) -> bool:
        """Can this process still run GPU work? (False after a sticky fault.) One tiny kernel and copy on
        the timing stream, on an element allocated at start-up. Not on the default stream with a fresh
        tensor, as before session 22: that check, run before every job, put the worker's later graph
        replays in a slower mode from its third or fourth job on (the libraries, all the probes timed, took
        about 0.33 us more a call, 1 us on split-K shapes; benchmarks/session22)."""
        try:
            torch.cuda.synchronize()
            with torch.cuda.stream(self.stream):
                self._alive.fill_(1).add_(1)
                return int(self._alive.item()) == 2
        except Exception:
            return False

    def sync(self) -> None:
        """Wait for the timing stream (the step profiler's EVO_PROFILE_SYNC)."""
        self.stream.synchronize()

    def _launch_checked(self, kernel: LoadedKernel, args) -> None:
        kernel.launch(args, self.stream.cuda_stream)
        synchronize(self.stream.cuda_stream)

    def check_once(self, kernel: LoadedKernel, M: int, N: int, K: int, bufs: tuple) -> tuple[Status | None, str, float]:
        """One draw: fresh inputs, poisoned output, armed guards, one launch, every check."""
        A, B, C = bufs
        gen, seed = fresh_generator()
        with torch.cuda.stream(self.stream):
            A.t.normal_(generator=gen)
            B.t.normal_(generator=gen)
            a_copy, b_copy = A.t.clone(), B.t.clone()
            C.t.fill_(float("nan"))
            for g in bufs:
                g.arm()
            self.stream.synchronize()
        self._launch_checked(kernel, kernel.args(A.t.data_ptr(), B.t.data_ptr(), C.t.data_ptr(), M, N, K))
        with torch.cuda.stream(self.stream):
            where = [name for name, g in zip("ABC", bufs) if not g.intact()]
            if where:
                return Status.MEMORY_VIOLATION, f"wrote outside its buffers (guard zone of {', '.join(where)} changed)", math.inf
            if not torch.equal(A.t, a_copy) or not torch.equal(B.t, b_copy):
                return Status.MEMORY_VIOLATION, "modified its inputs A or B", math.inf
            del a_copy, b_copy
            stats = error_stats(C.t.float(), reference(A.t, B.t))
        reason = verdict(stats)
        if reason:
            return Status.INCORRECT, f"{reason} [shape {M}x{N}x{K}, input seed {seed}]", stats["rel_err"]
        return None, "", stats["rel_err"]

    def _time_kernel(self, kernel: LoadedKernel, M: int, N: int, K: int, req: dict):
        """Timings in every requested mode, and the verdict of the rotating sets' check (the timing
        buffers are freed on return, before the last correctness draw)."""
        with steps.step("timing sets (allocate, fill)"):
            sets = TimingSets(self, M, N, K, req["modes"])
        with steps.step("launch arguments"):  # all before the capture, which then only launches
            args = sets.launch_args(kernel)
        call = lambda i: kernel.launch(args, self.stream.cuda_stream, i)
        return sets.time_all(call, req, verify=True, race=req.get("race"))

    def _evaluate_kernel(self, kernel: LoadedKernel, M: int, N: int, K: int, req: dict,
                         progress: Callable[[str], None]) -> KernelResult:
        gpu, launch = self.info.key, req["launch"]
        # on the timing stream, where all their work runs, as every other allocation of an evaluation.
        # Kernels launched on the default stream put the worker's later timings in a slower mode
        # (benchmarks/session22, session23); allocations there did not in session 23's probe
        with steps.step("correctness buffers"), torch.cuda.stream(self.stream):
            bufs = (Guarded(M, K), Guarded(K, N), Guarded(M, N))
        worst, checks = 0.0, 0
        for d in range(req["draws"]):
            progress(f"correctness draw {d + 1}/{req['draws']}")
            with steps.step("correctness draw"):
                status, error, err = self.check_once(kernel, M, N, K, bufs)
            if status:
                return KernelResult(status, error, max_rel_err=err, checks=checks, launch=launch, gpu=gpu)
            worst, checks = max(worst, err), checks + 1

        if not req["modes"]:  # correctness only (e.g. the tolerance experiment)
            return KernelResult(Status.OK, "", max_rel_err=worst, checks=checks, launch=launch, gpu=gpu)
        progress("timing")
        timings, post_error = self._time_kernel(kernel, M, N, K, req)
        if post_error:
            return KernelResult(Status.INCORRECT_AFTER_TIMING, post_error, max_rel_err=worst, checks=checks,
                                launch=launch, gpu=gpu, timings=tuple(timings))

        progress("correctness after timing")
        with steps.step("correctness draw"):
            status, error, err = self.check_once(kernel, M, N, K, bufs)
        if status:
            return KernelResult(Status.INCORRECT_AFTER_TIMING, f"after repeated launches: {error}", max_rel_err=err,
                                checks=checks, launch=launch, gpu=gpu, timings=tuple(timings))
        return KernelResult(Status.OK, "", timings=tuple(timings), max_rel_err=max(worst, err), checks=checks + 1,
                            launch=launch, gpu=gpu)


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}"
