"""Result records: what the compile stage, the GPU workers and the evaluator produce (plain, frozen,
JSON-able where they cross a process boundary), and what the search keeps of an evaluation."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum

from evo.core.shapes import Shape


class Status(str, Enum):
    OK = "ok"  # correct on every check, timed
    INCORRECT = "incorrect"  # wrong values, NaN/unwritten outputs
    INCORRECT_AFTER_TIMING = "incorrect_after_timing"  # right at first, wrong after repeated launches
    MEMORY_VIOLATION = "memory_violation"  # wrote outside C (guard zones) or into A/B
    FAULT = "fault"  # illegal address, misaligned access...: the CUDA context was lost
    LAUNCH_ERROR = "launch_error"  # the launch was refused (too many resources, bad config)
    TIMEOUT = "timeout"  # did not finish in time: the worker was killed
    UNSUPPORTED = "unsupported"  # the kernel's declaration excludes this shape
    BAD_LAUNCH = "bad_launch"  # the declaration evaluates to an impossible launch for this shape
    REJECTED = "rejected"  # failed the static checks
    COMPILE_ERROR = "compile_error"
    COMPILE_TIMEOUT = "compile_timeout"
    WORKER_ERROR = "worker_error"  # the harness itself failed (a bug in evo, not the kernel)

    def __str__(self) -> str:
        return self.value


#: statuses that say the kernel is wrong (as opposed to: not applicable, or evo's own trouble)
FAILURES = {Status.INCORRECT, Status.INCORRECT_AFTER_TIMING, Status.MEMORY_VIOLATION, Status.FAULT,
            Status.LAUNCH_ERROR, Status.TIMEOUT, Status.REJECTED, Status.COMPILE_ERROR, Status.COMPILE_TIMEOUT}


@dataclass(frozen=True)
class Timing:
    mode: str  # hot | rotating | server
    median_ms: float
    spread: float  # (max - min) / median over the samples
    samples_ms: tuple[float, ...]
    launches: int  # launches per sample (graph length; 1 in server mode)
    buffer_sets: int = 1
    clock_mhz: float = 0.0  # mean SM clock read during the samples (0: unknown)
    throttled: bool = False  # some sample ran below 85% of the max SM clock or with a slowdown reason
    method: str = "graph"  # graph | events | simulated

    @staticmethod
    def from_json(d: dict) -> Timing:
        return Timing(**{**d, "samples_ms": tuple(d["samples_ms"])})


@dataclass(frozen=True)
class KernelResult:
    status: Status
    error: str = ""
    timings: tuple[Timing, ...] = ()
    max_rel_err: float | None = None  # worst normwise relative error over the checks
    checks: int = 0  # correctness checks passed
    launch: dict | None = None
    backend: str = "gpu"
    gpu: str = ""

    def timing(self, mode: str) -> Timing | None:
        return next((t for t in self.timings if t.mode == mode), None)

    def to_json(self) -> dict:
        d = asdict(self)
        d["status"] = self.status.value
        return d

    @staticmethod
    def from_json(d: dict) -> KernelResult:
        return KernelResult(**{**d, "status": Status(d["status"]),
                               "timings": tuple(Timing.from_json(t) for t in d.get("timings", ()))})


@dataclass(frozen=True)
class LibraryResult:
    library: str  # torch | cublaslt_heuristic | cublaslt_autotuned
    mode: str
    status: str  # ok | error
    timing: Timing | None = None
    error: str = ""
    detail: str = ""  # e.g. the cuBLASLt algorithm chosen
    backend: str = "gpu"

    def to_json(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_json(d: dict) -> LibraryResult:
        return LibraryResult(**{**d, "timing": Timing.from_json(d["timing"]) if d.get("timing") else None})


@dataclass(frozen=True)
class DeviceInfo:
    name: str
    uuid: str
    num_sms: int
    l2_bytes: int
    smem_per_block_optin: int
    max_sm_clock_mhz: float = 0.0
    backend: str = "gpu"
    memory_bytes: int = 0  # device memory in all (0: unknown)
    extra: dict = field(default_factory=dict)

    @property
    def key(self) -> str:
        """Identifies the GPU in the archive (baselines are only reused on the same GPU)."""
        return f"{self.name} [{self.uuid}]"


@dataclass(frozen=True)
class Peaks:
    """Measured ceilings used for the roofline floor."""
    tflops: float  # fp16 tensor-core rate on random data
    bandwidth_gbs: float  # device copy, bytes read + written
    backend: str = "gpu"

    def floor_ms(self, flops: float, min_bytes: float) -> float:
        return max(flops / (self.tflops * 1e12), min_bytes / (self.bandwidth_gbs * 1e9)) * 1e3


@dataclass(frozen=True)
class Resources:
    registers: int = 0
    smem_static: int = 0  # bytes of static shared memory
    stack: int = 0  # bytes of stack frame
    spill_stores: int = 0
    spill_loads: int = 0
    barriers: int = 0

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class CompileResult:
    status: str  # "ok" | "error" | "timeout"
    key: str
    cubin: bytes | None = field(default=None, repr=False)
    resources: Resources | None = None
    log: str = ""  # trimmed compiler output (errors and warnings)
    seconds: float = 0.0
    cached: bool = False
    # whether the evaluator may time it as a programmatic dependent launch, from the PTX
    # (evo.core.kernel.pdl_verdicts_in_ptx); None: not known (a cache entry from before it was recorded)
    pdl_timing: bool | None = None
    # whether evo.dispatch may launch it so (evo.core.kernel.waits_first_in_ptx: evo export's manifest);
    # None: not known, as above
    pdl_dispatch: bool | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class Evaluation:
    kernel_id: str
    shape: Shape
    status: Status
    error: str = ""
    timings: tuple[Timing, ...] = ()
    mode: str = "rotating"
    best_library: str | None = None
    best_library_ms: float | None = None
    library_ms: dict = field(default_factory=dict)
    roofline_floor_ms: float | None = None
    max_rel_err: float | None = None
    resources: Resources | None = None
    backend: str = "gpu"
    gpu: str = ""
    launch: dict | None = None
    id: int | None = None  # archive row

    @property
    def timing(self) -> Timing | None:
        return next((t for t in self.timings if t.mode == self.mode), None)

    @property
    def time_ms(self) -> float | None:
        t = self.timing
        return t.median_ms if t else None

    @property
    def speedup(self) -> float | None:
        return self.best_library_ms / self.time_ms if self.ok and self.best_library_ms and self.time_ms else None

    @property
    def roofline_fraction(self) -> float | None:
        return self.roofline_floor_ms / self.time_ms if self.ok and self.roofline_floor_ms and self.time_ms else None

    @property
    def ok(self) -> bool:
        return self.status == Status.OK

    def raced(self, replays: int) -> bool:
        """Correct and timed with fewer than `replays` replays: stopped after its first, being far
        slower than its shape's fastest kernel (evaluator.race_factor)."""
        return self.ok and self.timing is not None and len(self.timing.samples_ms) < replays


@dataclass(frozen=True)
class Outcome:
    """What the search keeps of an evaluation (rebuilt from the archive on resume)."""
    status: Status
    speedup: float | None
    time_ms: float | None
    error: str = ""

    @staticmethod
    def of(e: Evaluation) -> Outcome:
        return Outcome(e.status, e.speedup, e.time_ms, e.error)
