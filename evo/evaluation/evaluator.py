"""Parent side: the whole evaluation pipeline for (candidate, shape) pairs.

static checks -> compile (process pool, cache) -> worker (correctness, timing, libraries beside)
-> fitness = best library time / kernel time, on the same GPU and in the same timing mode.
Everything is written to the archive as it finishes.
"""
from __future__ import annotations

import concurrent.futures as cf
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from evo.archive import records as stored
from evo.archive.store import Archive
from evo.config import EvaluatorConfig
from evo.core.errors import GpuUnavailable
from evo.core.kernel import Candidate, LaunchError
from evo.core.records import (
    CompileResult,
    DeviceInfo,
    Evaluation,
    KernelResult,
    LibraryResult,
    Peaks,
    Status,
)
from evo.core.shapes import Shape
from evo.evaluation.compiler import Compiler
from evo.evaluation.pool import Job, WorkerPool
from evo.evaluation.static_checks import check_source

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Prepared:
    """A candidate after static checks and compilation."""
    candidate: Candidate
    status: Status | None  # None: ready to run
    error: str = ""
    compiled: CompileResult | None = None


class Evaluator:
    def __init__(self, cfg: EvaluatorConfig, *, archive: Archive | None = None, run_id: int | None = None,
                 pool: WorkerPool | None = None, compiler: Compiler | None = None):
        self.cfg = cfg
        self.archive = archive
        self.run_id = run_id
        self.pool = pool or WorkerPool(backend=cfg.backend, devices=[str(g) for g in cfg.gpus] or None,
                                       stage_timeout_s=cfg.timeout_s)
        self.compiler = compiler or Compiler(cache_dir=cfg.cache_dir, timeout_s=cfg.compile_timeout_s,
                                             workers=cfg.compile_workers)
        self.backend = cfg.backend
        self._prepared: dict[str, cf.Future] = {}
        self._peaks: dict[str, Peaks] = {}
        self._baselines: dict[tuple, dict[str, float]] = {}

    # ---- setup ----------------------------------------------------------------------------
    def start(self) -> Evaluator:
        infos = self.pool.start().infos
        missing = []
        for info in infos:
            cached = stored.peaks(self.archive, info.key, self.backend) if self.archive else None
            if cached:
                self._peaks[info.key] = cached
            else:
                missing.append(info)
        if missing:
            log.info("measuring the device's peak rate and bandwidth")
            by_device = dict(zip(self.pool.devices, infos))
            for device, reply in self.pool.call_each({"op": "peaks"}).items():
                info = by_device[device]
                if "peaks" not in reply:
                    raise GpuUnavailable(f"measuring the peaks of GPU {device} failed: {reply.get('harness_error')}\n"
                                         f"{reply.get('trace', '')}")
                peaks = Peaks(**reply["peaks"])
                self._peaks[info.key] = peaks
                if self.archive:
                    stored.put_peaks(self.archive, info.key, self.backend, peaks, info)
        return self

    def peaks(self, gpu: str) -> Peaks:
        """The measured peak rate and bandwidth of one GPU (by its DeviceInfo.key)."""
        return self._peaks[gpu]

    @property
    def devices(self) -> list[DeviceInfo]:
        return self.pool.infos

    @property
    def num_sms(self) -> int:
        return self.devices[0].num_sms

    def close(self) -> None:
        self.pool.close()
        self.compiler.close()

    # ---- compile ahead --------------------------------------------------------------------
    def prepare(self, candidate: Candidate) -> cf.Future:
        """Static checks and compile in the background; deduplicated by content hash."""
        if candidate.id not in self._prepared:
            self._prepared[candidate.id] = self.compiler._pool.submit(self._prepare, candidate)
        return self._prepared[candidate.id]

    def _prepare(self, c: Candidate) -> Prepared:
        rejections = check_source(c.source)
        if rejections:
            return Prepared(c, Status.REJECTED, "; ".join(str(r) for r in rejections))
        r = self.compiler.compile(c.source)
        if r.status == "timeout":
            return Prepared(c, Status.COMPILE_TIMEOUT, r.log, r)
        if not r.ok:
            return Prepared(c, Status.COMPILE_ERROR, r.log, r)
        return Prepared(c, None, "", r)

    # ---- evaluate -------------------------------------------------------------------------
    def library_times(self, gpu: str, shape: Shape, mode: str) -> dict[str, float]:
        key = (gpu, shape, mode)
        if key not in self._baselines and self.archive:
            found = stored.library_times(self.archive, gpu, shape, mode, backend=self.backend)
            if found:
                self._baselines[key] = found
        return self._baselines.get(key, {})

    def _missing_libraries(self, gpu: str, shape: Shape) -> list[str]:
        have = [self.library_times(gpu, shape, m) for m in self.cfg.modes]
        return [lib for lib in self.cfg.libraries if any(lib not in h for h in have)]

    def evaluate(self, pairs: Iterable[tuple[Candidate, Shape]], *, meta: Callable[[Candidate], dict] | None = None,
                 measure_libraries: bool = True, later: Iterable[cf.Future] = (),
                 admit: Callable[[Any], list[tuple[Candidate, Shape]]] | None = None) -> Iterator[Evaluation]:
        """Evaluate each (candidate, shape); yields in completion order, each already archived.

        Every compile starts at once (on every core); a job reaches the GPU as soon as its
        compile is done, so the GPU works while later candidates are still compiling. `later`:
        futures of work still being made (e.g. LLM answers); as each completes, `admit(its result)`
        (called on this thread) gives the pairs it adds, which join the compiles at once."""
        by_future: dict[cf.Future, list[tuple[Candidate, Shape]]] = {}

        def add(new: Iterable[tuple[Candidate, Shape]]) -> None:
            for cand, shape in new:
                by_future.setdefault(self.prepare(cand), []).append((cand, shape))

        add(pairs)
        waiting = set(later)
        no_gpu: list[tuple[Evaluation, Candidate]] = []

        def jobs():
            while by_future or waiting:
                done, _ = cf.wait([*by_future, *waiting], return_when=cf.FIRST_COMPLETED)
                for fut in done:
                    if fut in waiting:
                        waiting.discard(fut)
                        add(admit(fut.result()) if admit else fut.result())
                        continue
                    prepared: Prepared = fut.result()
                    for cand, shape in by_future.pop(fut):
                        job = self._job(cand, shape, prepared, meta, measure_libraries, no_gpu)
                        if job:
                            yield job

        for job, reply in self.pool.run(jobs()):
            while no_gpu:
                e, cand = no_gpu.pop(0)
                yield self._finish(e, cand, meta)
            cand, shape, prepared = job.tag
            yield self._finish(self._from_reply(reply, cand, shape, prepared), cand, meta)
        while no_gpu:
            e, cand = no_gpu.pop(0)
            yield self._finish(e, cand, meta)

    def _job(self, cand: Candidate, shape: Shape, prepared: Prepared, meta, measure_libraries: bool,
             no_gpu: list) -> Job | None:
        if self.archive:
            m = meta(cand) if meta else {}
            stored.add_kernel(self.archive, cand, run_id=self.run_id, generation=m.get("generation"),
                              island=m.get("island"))
            if prepared.compiled:
                stored.add_compile(self.archive, cand.id, prepared.compiled)
        early = self._early_failure(prepared, shape)
        if early is None:
            try:
                launch = cand.declaration.launch_for(shape, num_sms=self.num_sms).to_json()
            except LaunchError as e:
                early = self._result(cand, shape, Status.BAD_LAUNCH, str(e), prepared)
        if early is not None or prepared.compiled is None:
            no_gpu.append((early or self._result(cand, shape, Status.COMPILE_ERROR, "no compiled module", prepared), cand))
            return None
        request = {"op": "evaluate", "shape": [shape.M, shape.N, shape.K], "cubin": prepared.compiled.cubin,
                   "source": cand.source, "launch": launch, "draws": self.cfg.draws, "modes": self.cfg.modes,
                   "replays": self.cfg.replays, "target_replay_ms": self.cfg.target_replay_ms,
                   "server_gap_ms": list(self.cfg.server_gap_ms)}
        prepare = (lambda info, s=shape: {"libraries": self._missing_libraries(info.key, s)}) \
            if measure_libraries else None
        return Job(request, tag=(cand, shape, prepared), prepare=prepare)

    def measure_libraries(self, shapes: Iterable[Shape]) -> Iterator[tuple[Shape, list[LibraryResult]]]:
        """Time the libraries alone (evo bench): one job per shape, spread over the GPUs."""
        jobs = [Job({"op": "evaluate", "shape": [s.M, s.N, s.K], "cubin": None, "source": None, "launch": None,
                     "draws": 1, "modes": self.cfg.modes, "replays": self.cfg.replays,
                     "target_replay_ms": self.cfg.target_replay_ms, "server_gap_ms": list(self.cfg.server_gap_ms),
                     "libraries": list(self.cfg.libraries)}, tag=s) for s in shapes]
        for job, reply in self.pool.run(jobs):
            yield job.tag, self._store_libraries(reply, job.tag)

    def _early_failure(self, p: Prepared, shape: Shape) -> Evaluation | None:
        if p.status is not None:
            return self._result(p.candidate, shape, p.status, p.error, p)
        if not p.candidate.declaration.supports(shape, num_sms=self.num_sms):
            return self._result(p.candidate, shape, Status.UNSUPPORTED,
                                "the kernel's '// @evo requires' lines exclude this shape", p)
        return None

    def _result(self, c: Candidate, shape: Shape, status: Status, error: str, p: Prepared | None) -> Evaluation:
        res = p.compiled.resources if p and p.compiled else None
        return Evaluation(c.id, shape, status, error, mode=self.cfg.mode, resources=res, backend=self.backend,
                          gpu=self.devices[0].key)

    def _store_libraries(self, reply: dict, shape: Shape) -> list[LibraryResult]:
        libs = [LibraryResult.from_json(d) for d in reply.get("libraries", [])]
        gpu = reply.get("gpu") or self.devices[0].key
        for lib in libs:
            if self.archive:
                stored.put_baseline(self.archive, gpu, self.backend, shape, lib)
            if lib.status == "ok" and lib.timing:
                self._baselines.setdefault((gpu, shape, lib.mode), {})[lib.library] = lib.timing.median_ms
        return libs

    def _from_reply(self, reply: dict, c: Candidate, shape: Shape, p: Prepared) -> Evaluation:
        if "harness_error" in reply:
            return self._result(c, shape, Status.WORKER_ERROR, reply["harness_error"] + "\n" + reply.get("trace", ""), p)
        k = KernelResult.from_json(reply["kernel"])
        self._store_libraries(reply, shape)
        libs = self.library_times(k.gpu, shape, self.cfg.mode)
        best = min(libs, key=lambda lib: libs[lib]) if libs else None
        peaks = self._peaks.get(k.gpu)
        return Evaluation(c.id, shape, k.status, k.error, k.timings, self.cfg.mode, best, libs.get(best) if best else None,
                          dict(libs), peaks.floor_ms(shape.flops, shape.min_bytes) if peaks else None, k.max_rel_err,
                          p.compiled.resources if p.compiled else None, k.backend, k.gpu, k.launch)

    def _finish(self, e: Evaluation, c: Candidate, meta) -> Evaluation:
        if not self.archive:
            return e
        m = meta(c) if meta else {}
        row = stored.add_evaluation(self.archive, e, run_id=self.run_id, operator=c.operator,
                                    generation=m.get("generation"), island=m.get("island"))
        return Evaluation(**{**e.__dict__, "id": row})
