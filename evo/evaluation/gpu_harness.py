"""Worker side: one (kernel, shape) evaluation on the GPU, and the libraries beside it.

Correctness (DESIGN.md): fresh random normal inputs for every draw, an fp32-accumulated
reference, the output poisoned with NaN before each launch, guard zones around every buffer
and A/B compared with copies after the launch; repeated after timing with new inputs.
Timing: graph replays in hot and rotating modes, isolated launches in server mode; the libraries
are timed by the same code on the same buffers in the same process.
Imported only inside GPU worker processes.
"""
from __future__ import annotations

import math
import os
import random
from typing import Callable

import torch

from evo.evaluation import gpu_baselines
from evo.evaluation.gpu_launch import CudaError, LoadedKernel, synchronize
from evo.evaluation.gpu_timing import ClockReader, launches_for, time_events, time_graph, time_server
from evo.evaluation.records import ContextLost, DeviceInfo, KernelResult, Status
from evo.evaluation.tolerance import error_stats, verdict

GUARD_BYTES = 1 << 20
GUARD_BYTE = 0xA5
MAX_ROTATING_SETS = 8192


def fresh_generator() -> tuple[torch.Generator, int]:
    seed = int.from_bytes(os.urandom(6), "little")
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)
    return g, seed


class Guarded:
    """A fp16 matrix inside one allocation with a guard zone on each side."""

    def __init__(self, rows: int, cols: int):
        n = rows * cols * 2
        self.raw = torch.empty(2 * GUARD_BYTES + n, dtype=torch.uint8, device="cuda")
        self.t = self.raw[GUARD_BYTES:GUARD_BYTES + n].view(torch.float16).view(rows, cols)
        self.front, self.back = self.raw[:GUARD_BYTES], self.raw[GUARD_BYTES + n:]

    def arm(self) -> None:
        self.front.fill_(GUARD_BYTE)
        self.back.fill_(GUARD_BYTE)

    def intact(self) -> bool:
        return bool((self.front == GUARD_BYTE).all()) and bool((self.back == GUARD_BYTE).all())


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """fp32-accumulated product (fp16 values are exact in fp32; TF32 is off in the worker)."""
    return torch.matmul(a.float(), b.float())


class GpuHarness:
    def __init__(self):
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.set_float32_matmul_precision("highest")
        torch.zeros(1, device="cuda")  # create torch's (primary) context first
        self.info = self._device_info()
        self.stream = torch.cuda.Stream()
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

        def fail(status: Status, error: str, **kw) -> dict:
            out["kernel"] = KernelResult(status, error, backend="gpu", gpu=gpu, launch=req.get("launch"), **kw).to_json()
            return out

        try:
            if req.get("cubin") is not None:
                try:
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
                                               launch=req.get("launch")))
            return fail(Status.LAUNCH_ERROR, str(e))
        except torch.cuda.OutOfMemoryError as e:
            return fail(Status.WORKER_ERROR, f"out of GPU memory in the harness: {e}")
        except RuntimeError as e:
            text = str(e)
            if "CUDA" in text or "cuda" in text:  # torch noticed a fault first
                raise ContextLost(KernelResult(Status.FAULT, f"the kernel faulted: {text.splitlines()[0]}",
                                               backend="gpu", gpu=gpu, launch=req.get("launch")))
            raise
        finally:
            if kernel is not None:
                try:
                    kernel.unload()
                except Exception:
                    pass
            torch.cuda.empty_cache()

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

    def _evaluate_kernel(self, kernel: LoadedKernel, M: int, N: int, K: int, req: dict,
                         progress: Callable[[str], None]) -> KernelResult:
        gpu, launch = self.info.key, req["launch"]
        bufs = (Guarded(M, K), Guarded(K, N), Guarded(M, N))
        worst, checks = 0.0, 0
        for d in range(req["draws"]):
            progress(f"correctness draw {d + 1}/{req['draws']}")
            status, error, err = self.check_once(kernel, M, N, K, bufs)
            if status:
                return KernelResult(status, error, max_rel_err=err, checks=checks, launch=launch, gpu=gpu)
            worst, checks = max(worst, err), checks + 1

        if not req["modes"]:  # correctness only (e.g. the tolerance experiment)
            return KernelResult(Status.OK, "", max_rel_err=worst, checks=checks, launch=launch, gpu=gpu)
        progress("timing")
        sets = TimingSets(self, M, N, K, req["modes"])
        call = lambda i: kernel.launch(sets.args(kernel, i), self.stream.cuda_stream)  # noqa: E731
        timings, post_error = sets.time_all(call, req, verify=lambda: sets.verify_sample(M, N, K))
        if post_error:
            return KernelResult(Status.INCORRECT_AFTER_TIMING, post_error, max_rel_err=worst, checks=checks,
                                launch=launch, gpu=gpu, timings=tuple(timings))
        del sets

        progress("correctness after timing")
        status, error, err = self.check_once(kernel, M, N, K, bufs)
        if status:
            return KernelResult(Status.INCORRECT_AFTER_TIMING, f"after repeated launches: {error}", max_rel_err=err,
                                checks=checks, launch=launch, gpu=gpu, timings=tuple(timings))
        return KernelResult(Status.OK, "", timings=tuple(timings), max_rel_err=max(worst, err), checks=checks + 1,
                            launch=launch, gpu=gpu)


class TimingSets:
    """Buffer sets for timing: one for hot mode, enough for > 3x L2 in rotating and server modes."""

    def __init__(self, harness: GpuHarness, M: int, N: int, K: int, modes: list[str]):
        self.h = harness
        set_bytes = 2 * (M * K + K * N + M * N)
        rotating = any(m in ("rotating", "server") for m in modes)
        self.n = min(MAX_ROTATING_SETS, max(2, math.ceil(3 * harness.info.l2_bytes / set_bytes))) if rotating else 1
        gen, _ = fresh_generator()
        with torch.cuda.stream(harness.stream):
            self.A = torch.empty(self.n, M, K, dtype=torch.float16, device="cuda").normal_(generator=gen)
            self.B = torch.empty(self.n, K, N, dtype=torch.float16, device="cuda").normal_(generator=gen)
            self.C = torch.empty(self.n, M, N, dtype=torch.float16, device="cuda")
        harness.stream.synchronize()
        self._args: dict = {}

    def args(self, kernel: LoadedKernel, i: int):
        if i not in self._args:
            self._args[i] = kernel.args(self.A[i].data_ptr(), self.B[i].data_ptr(), self.C[i].data_ptr(),
                                        self.A.shape[1], self.B.shape[2], self.A.shape[2])
        return self._args[i]

    def estimate_ms(self, call: Callable[[int], None]) -> float:
        s = self.h.stream
        with torch.cuda.stream(s):
            call(0)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record(s)
            for i in range(3):
                call(i % self.n)
            end.record(s)
            end.synchronize()
        return start.elapsed_time(end) / 3

    def time_all(self, call: Callable[[int], None], req: dict, *, verify: Callable[[], str | None] | None = None,
                 capturable: bool = True):
        """Time `call` in every requested mode; rotating mode ends with a poisoned, verified replay."""
        h, timings, post_error = self.h, [], None
        est = self.estimate_ms(call)
        timer = time_graph if capturable else time_events
        for mode in req["modes"]:
            if mode == "server":
                timings.append(time_server(call, sets=self.n, samples=req.get("server_samples", 40),
                                           gap_ms=tuple(req.get("server_gap_ms", (0.05, 2.0))), stream=h.stream,
                                           clock=h.clock, seed=int.from_bytes(os.urandom(4), "little")))
                continue
            sets = 1 if mode == "hot" else self.n
            launches = launches_for(est, req.get("target_replay_ms", 20.0), sets)
            launches = math.ceil(launches / sets) * sets  # every set equally often
            timings.append(timer(call, mode=mode, launches=launches, sets=sets, replays=req["replays"],
                                 stream=h.stream, clock=h.clock))
            if mode == "rotating" and verify is not None:
                with torch.cuda.stream(h.stream):
                    self.C.fill_(float("nan"))
                    for i in range(self.n):
                        call(i)
                h.stream.synchronize()
                post_error = verify()
        return timings, post_error

    def verify_sample(self, M: int, N: int, K: int) -> str | None:
        """Check up to 3 randomly chosen buffer sets after a pass over all of them."""
        for i in random.Random(os.urandom(8)).sample(range(self.n), min(3, self.n)):
            with torch.cuda.stream(self.h.stream):
                stats = error_stats(self.C[i].float(), reference(self.A[i], self.B[i]))
            reason = verdict(stats)
            if reason:
                return f"after {self.n} back-to-back launches over rotating buffers, set {i}: {reason}"
        return None
