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
from evo.core.errors import CompileToolError, GpuUnavailable
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
from evo.core.summary import geomean
from evo.evaluation.compiler import Compiler
from evo.evaluation.cubin_calls import outside_calls
from evo.evaluation.pool import Job
from evo.evaluation.pool_api import Pool, make_pool
from evo.evaluation.static_checks import check_source

log = logging.getLogger(__name__)
LIBRARY_DRIFT_SHAPES = 6  # shapes whose libraries a sweep times again after its kernels (Evaluator.library_drift)
POOL_ERRORS = (OSError, TimeoutError, GpuUnavailable)  # the pool failed, not the job: stop a phase of library jobs


@dataclass(frozen=True)
class Prepared:
    """A candidate after static checks and compilation."""
    candidate: Candidate
    status: Status | None  # None: ready to run
    error: str = ""
    compiled: CompileResult | None = None
    pdl: bool = False  # launched as a programmatic dependent (evaluator.pdl, and its PTX allows it)


class Evaluator:
    def __init__(self, cfg: EvaluatorConfig, *, archive: Archive | None = None, run_id: int | None = None,
                 pool: Pool | None = None, compiler: Compiler | None = None):
        self.cfg = cfg
        self.archive = archive
        self.run_id = run_id
        self.pool: Pool = pool or make_pool(cfg)
        self.compiler = compiler or Compiler(cache_dir=cfg.cache_dir, timeout_s=cfg.compile_timeout_s,
                                             workers=cfg.compile_workers)
        self.backend = cfg.backend
        self._prepared: dict[str, cf.Future] = {}
        self._peaks: dict[str, Peaks] = {}
        self._baselines: dict[tuple, dict[str, float]] = {}
        self._alone: dict[tuple[str, Shape, str], set[str]] = {}  # (gpu, shape, mode) -> libraries timed alone here
        self._fastest: dict[tuple, float] = {}  # (gpu, shape) -> fastest kernel time so far, fitness mode

    # ---- setup ----------------------------------------------------------------------------
    def start(self) -> Evaluator:
        log.info("evaluator.pdl=true: kernels whose PTX first waits for the kernel launched before them are timed "
                 "as programmatic dependent launches, each overlapping its own previous launch in the timing graphs "
                 "(a gain it did not keep behind a foreign kernel; docs/timing.md)" if self.cfg.pdl else
                 "every kernel is timed as a plain launch, as the libraries are (evaluator.pdl=false; docs/timing.md)")
        self.pool.start()
        self._ensure_peaks()
        if self.archive and self.run_id is not None:  # a resumed run races against what it measured before
            # ... before the generation it redoes (a search's saved state), as the run first did
            redo = (self.archive.get_state(self.run_id, "search") or {}).get("generation")
            self._fastest.update(stored.fastest_kernels(self.archive, self.run_id, self.cfg.mode,
                                                        before_generation=redo))
        return self

    def _ensure_peaks(self) -> None:
        """Peaks of every GPU of the pool (from the archive, else measured on that GPU); also for
        GPUs that joined a cluster after the start."""
        infos = self.pool.infos  # first: on a cluster, this learns the workers that joined
        missing = [device for device, info in zip(self.pool.devices, infos) if not self._has_peaks(info.key)]
        if not missing:
            return
        if self.cfg.backend == "simulated":
            log.info(f"SIMULATED peaks of {len(missing)} test-double device(s) (modelled, not measured)")
        else:
            log.info(f"measuring the peak rate and bandwidth of {len(missing)} GPU(s)")
        for device, reply in self.pool.call_each({"op": "peaks"}, missing).items():
            if "peaks" not in reply:
                raise GpuUnavailable(f"measuring the peaks of GPU {device} failed: {reply.get('harness_error')}\n"
                                     f"{reply.get('trace', '')}")
            self._keep_peaks(reply, infos)

    def _has_peaks(self, gpu: str) -> bool:
        """Whether this GPU's peaks are known (measured, or stored in the archive: then loaded)."""
        if gpu not in self._peaks and self.archive:
            cached = stored.peaks(self.archive, gpu, self.backend)
            if cached:
                self._peaks[gpu] = cached
        return gpu in self._peaks

    def _take_peaks(self, reply: dict) -> None:
        """Peaks measured beside a job (asked for by on_gpu for a GPU that joined after the start):
        kept, so that no separate call has to wait behind the job already queued on that GPU."""
        if "peaks" in reply and reply.get("gpu") and reply["gpu"] not in self._peaks:
            self._keep_peaks(reply, self.pool.infos)

    def _keep_peaks(self, reply: dict, infos: list[DeviceInfo]) -> None:
        """A reply's measured peaks, kept for its GPU and stored in the archive (when that GPU's
        DeviceInfo is among `infos`)."""
        peaks, gpu = Peaks(**reply["peaks"]), reply["gpu"]
        self._peaks[gpu] = peaks
        info = next((i for i in infos if i.key == gpu), None)
        if self.archive and info is not None:
            stored.put_peaks(self.archive, gpu, self.backend, peaks, info)

    def peaks(self, gpu: str) -> Peaks:
        """The measured peak rate and bandwidth of one GPU (by its DeviceInfo.key)."""
        return self._peaks[gpu]

    @property
    def devices(self) -> list[DeviceInfo]:
        return self.pool.infos

    @property
    def num_sms(self) -> int:
        """The SM count that seeds and suggestions are made for: the smallest of the pool's GPUs.
        Launches are not computed from it: each job's launch is computed for the GPU that runs it."""
        return min(d.num_sms for d in self.devices)

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
        refused = outside_calls(r.cubin) if r.cubin is not None else None
        if refused:  # what the preprocessor hid from the static checks (cubin_calls.py)
            return Prepared(c, Status.REJECTED, refused, r)
        return Prepared(c, None, "", r, pdl=self.cfg.pdl and self._pdl_timing(c, r))

    def _pdl_timing(self, c: Candidate, r: CompileResult) -> bool:
        """Whether the kernel is timed as a programmatic dependent launch: only where its PTX waits for
        the grid before it before touching memory (so that it cannot overlap the kernel before it) and
        never signals its dependents early (which would speed up its own next replay)."""
        try:
            return self.compiler.pdl_timing(c.source, r)
        except CompileToolError as e:
            log.warning(f"kernel {c.id[:12]}: no PTX to check ({e}); timed without PDL")
            return False

    # ---- evaluate -------------------------------------------------------------------------
    def library_times(self, gpu: str, shape: Shape, mode: str) -> dict[str, float]:
        key = (gpu, shape, mode)
        if key not in self._baselines and self.archive:
            found = stored.library_times(self.archive, gpu, shape, mode, backend=self.backend)
            if found:
                self._baselines[key] = found
        return self._baselines.get(key, {})

    def _missing_libraries(self, gpu: str, shape: Shape, *, alone: bool = False) -> list[str]:
        """The libraries without a timing on this GPU and shape in some mode; with `alone`, without one
        timed alone (a library-only job)."""
        known = self._known_alone if alone else self.library_times
        have = [known(gpu, shape, m) for m in self.cfg.modes]
        return [lib for lib in self.cfg.libraries if any(lib not in h for h in have)]

    def evaluate(self, pairs: Iterable[tuple[Candidate, Shape]], *, meta: Callable[[Candidate], dict] | None = None,
                 measure_libraries: bool = True, later: Iterable[cf.Future] = (),
                 admit: Callable[[Any], list[tuple[Candidate, Shape]]] | None = None,
                 race: bool = True) -> Iterator[Evaluation]:
        """Evaluate each (candidate, shape); yields in completion order, each already archived.

        Every compile starts at once (on every core); jobs reach the GPU in the order given, so a
        run cut short (time limit, Ctrl-C) has done the first-planned pairs, whatever compiled first.
        A pair whose compile is not done yet lets ready ones behind it go first, so the GPU only
        waits when nothing at all is ready. `later`: futures of work still being made (e.g. LLM
        answers); as each completes, `admit(its result)` (called on this thread) gives the pairs it
        adds, which start compiling at once and queue behind the pairs already planned.
        `race` (with `evaluator.race_factor` > 0): a kernel whose first replay is already that much
        slower than the fastest kernel timed on its shape and GPU gets no more replays; False for
        measurements that must time every kernel alike (re-timing, benches)."""
        queue: list[tuple[Candidate, Shape, cf.Future]] = []

        def add(new: Iterable[tuple[Candidate, Shape]]) -> None:
            queue.extend((cand, shape, self.prepare(cand)) for cand, shape in new)

        add(pairs)
        waiting = set(later)
        no_gpu: list[tuple[Evaluation, Candidate]] = []

        def jobs():
            while queue or waiting:
                for fut in [f for f in waiting if f.done()]:
                    waiting.discard(fut)
                    add(admit(fut.result()) if admit else fut.result())
                ready = next((i for i, (_, _, fut) in enumerate(queue) if fut.done()), None)
                if ready is None:  # nothing ready: wait a moment, then let the pool collect finished GPU jobs
                    done, _ = cf.wait([fut for _, _, fut in queue] + list(waiting), timeout=0.05,
                                      return_when=cf.FIRST_COMPLETED)
                    if not done:
                        yield None
                    continue
                cand, shape, fut = queue.pop(ready)
                job = self._job(cand, shape, fut.result(), meta, measure_libraries, no_gpu, race)
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
             no_gpu: list, race: bool = True) -> Job | None:
        if self.archive:
            m = meta(cand) if meta else {}
            stored.add_kernel(self.archive, cand, run_id=self.run_id, generation=m.get("generation"),
                              island=m.get("island"))
            if prepared.compiled:
                stored.add_compile(self.archive, cand.id, prepared.compiled)
        early = self._early_failure(prepared, shape)
        if early is None:  # refused before any GPU work only when no GPU of the pool could run it
            on_each = [_launch_on(cand, shape, n) for n in sorted({info.num_sms for info in self.devices})]
            if all("refuse" in x for x in on_each):
                why = on_each[0]["refuse"]
                early = self._result(cand, shape, Status(why["status"]), why["error"], prepared)
        if early is not None or prepared.compiled is None:
            no_gpu.append((early or self._result(cand, shape, Status.COMPILE_ERROR, "no compiled module", prepared), cand))
            return None
        request = {"op": "evaluate", "shape": [shape.M, shape.N, shape.K], "cubin": prepared.compiled.cubin,
                   "source": cand.source, "launch": None, "draws": self.cfg.draws, "modes": self.cfg.modes,
                   "replays": self.cfg.replays, "target_replay_ms": self.cfg.target_replay_ms,
                   "server_gap_ms": list(self.cfg.server_gap_ms)}

        def on_gpu(info: DeviceInfo) -> dict:  # computed for the GPU that runs the job
            extra = _launch_on(cand, shape, info.num_sms)
            if prepared.pdl and "launch" in extra:
                extra["launch"]["pdl"] = True
            fastest = self._fastest.get((info.key, shape))
            if race and fastest and self.cfg.race_factor > 0:
                extra["race"] = {"mode": self.cfg.mode, "ms": self.cfg.race_factor * fastest}
            if measure_libraries:
                extra["libraries"] = self._missing_libraries(info.key, shape)
            if "launch" in extra and not self._has_peaks(info.key):  # joined a cluster: peaks come with the result
                extra["peaks"] = True
            return extra

        return Job(request, tag=(cand, shape, prepared), prepare=on_gpu)

    def _library_request(self, shape: Shape, libraries: list[str]) -> dict:
        return {"op": "evaluate", "shape": [shape.M, shape.N, shape.K], "cubin": None, "source": None, "launch": None,
                "draws": 1, "modes": self.cfg.modes, "replays": self.cfg.replays,
                "target_replay_ms": self.cfg.target_replay_ms, "server_gap_ms": list(self.cfg.server_gap_ms),
                "libraries": libraries}

    def measure_libraries(self, shapes: Iterable[Shape]) -> Iterator[tuple[Shape, list[LibraryResult]]]:
        """Time the libraries alone (evo bench): one job per shape, spread over the GPUs."""
        jobs = [Job(self._library_request(s, list(self.cfg.libraries)), tag=s) for s in shapes]
        for job, reply in self.pool.run(jobs):
            yield job.tag, self._store_libraries(reply, job.tag, alone=True)

    def _known_alone(self, gpu: str, shape: Shape, mode: str) -> set[str]:
        """The libraries timed alone (a library-only job) on this GPU, shape and mode: in this session or,
        stored, before."""
        known = set(self._alone.get((gpu, shape, mode), ()))
        if self.archive:
            known |= set(stored.library_times(self.archive, gpu, shape, mode, backend=self.backend, alone=True))
        return known

    def shapes_without_libraries(self, shapes: Iterable[Shape], *, retime_beside: bool = True) -> list[Shape]:
        """The shapes on which some GPU of the pool has not timed some library alone (none when
        `libraries` is empty, or on a resumed run whose archive has them all): timed beside a kernel (an
        archive from before session 22) counts as not timed, unless `retime_beside` is off (a resumed
        run: its kernels' speedups so far are against those timings)."""
        keys = [info.key for info in self.pool.infos]
        return [s for s in shapes if any(self._missing_libraries(k, s, alone=retime_beside) for k in keys)]

    def time_libraries_first(self, shapes: Iterable[Shape], on_shape: Callable[[Shape], None] | None = None, *,
                             retime_beside: bool = True) -> int:
        """Time the libraries on every GPU of the pool, for each shape where they have not been timed alone
        there (with `retime_beside` off: not at all), before any kernel runs (library-only jobs, as `evo
        bench` runs them); a later kernel job then carries none. Why first: in session 22 a sweep's worker,
        after its first five jobs, took up to 15% longer for the libraries on small shapes (about 0.33 us
        more per call, 1 us on split-K shapes) than a fresh worker or a plain process did; what causes it
        there is not known yet (docs/timing.md, "Two launch modes"). A library that fails is tried once
        more; one that fails again is left to the kernels' jobs, with a warning, as is everything after a
        pool error (a cluster that lost a worker). A failure never replaces a good timing taken before.
        Returns the (shape, GPU) pairs that now have every library timed. A GPU that joins a cluster later
        times them with its first kernel on each shape, as before."""
        devices = list(zip(self.pool.devices, self.pool.infos))

        def still_missing(shape: Shape) -> dict[str, list[str]]:
            missing = {d: self._missing_libraries(info.key, shape, alone=retime_beside) for d, info in devices}
            return {d: libs for d, libs in missing.items() if libs}

        timed = 0
        for shape in shapes:
            missing = still_missing(shape)
            before = set(missing)
            for _ in range(2):  # a second try for what failed (a transient hang or fault)
                if not missing:
                    break
                groups: dict[tuple[str, ...], list[str]] = {}  # the GPUs that lack the same libraries, together
                for d, libs in missing.items():
                    groups.setdefault(tuple(libs), []).append(d)
                for wanted, ds in groups.items():
                    try:
                        replies = self.pool.call_each(self._library_request(shape, list(wanted)), ds)
                    except POOL_ERRORS as e:  # the pool, not a library: stop the phase
                        log.warning(f"timing the libraries first stopped at {shape} ({type(e).__name__}: {e}); the "
                                    "kernels' jobs time the rest beside a kernel")
                        return timed
                    for reply in replies.values():  # stored as they come: a later group's error loses none
                        self._store_libraries(reply, shape, keep_known=True, alone=True)
                missing = still_missing(shape)
            timed += len(before) - len(missing)
            for d, libs in missing.items():
                log.warning(f"{shape}: {', '.join(libs)} could not be timed alone on GPU {d} (twice; the error is in "
                            "the archive's baselines table unless it held a good timing, which stands): the "
                            "kernels' jobs there time them beside a kernel where none is known")
            if on_shape is not None:
                on_shape(shape)
        return timed

    def library_drift(self, shapes: Iterable[Shape], *, most: int = LIBRARY_DRIFT_SHAPES) -> dict | None:
        """The libraries timed again, alone, on every GPU of the pool, on the `most` of `shapes` with the
        fewest FLOPs (where a launch mode shows most), after a run's kernels, against the times stored for
        them (timed first in this run, or by an earlier run into the same archive); not stored. Why: a
        worker can step into a mode that reads every launch about 0.33 us slower, libraries and kernels
        alike (one H100, `benchmarks/session31/`); the libraries, timed first, then miss the step that the
        kernels after it take, and the small shapes' ratios are understated. Timings on a throttled GPU
        are left out. Returns {"ratio": the largest over the GPUs of the geomean of now / then over that
        GPU's (shape, library) pairs, "gpu": that GPU, "per_gpu": {GPU: geomean}, "pairs": how many were
        timed both times, "shapes": the shapes timed, "worst": [GPU, shape, library, then_ms, now_ms] of
        the largest ratio, "restarts": the pool's worker restarts so far (a restarted worker is fresh
        again)}, or None where nothing was timed both times (no libraries, every timing failed)."""
        picked = sorted(set(shapes), key=lambda s: (s.flops, s.M, s.N, s.K))[:most]
        if not picked or not self.cfg.libraries:
            return None
        ratios: list[tuple[float, str, Shape, str, float, float]] = []
        timed: list[Shape] = []
        for shape in picked:
            try:
                replies = self.pool.call_each(self._library_request(shape, list(self.cfg.libraries)))
            except POOL_ERRORS as e:
                log.warning(f"timing the libraries again stopped at {shape} ({type(e).__name__}: {e})")
                break
            timed.append(shape)
            for reply in replies.values():
                gpu = reply["gpu"]
                then = self.library_times(gpu, shape, self.cfg.mode)
                for lib in map(LibraryResult.from_json, reply.get("libraries", [])):
                    if (lib.status == "ok" and lib.timing and lib.timing.median_ms > 0 and not lib.timing.throttled
                            and lib.mode == self.cfg.mode and then.get(lib.library)):
                        ratios.append((lib.timing.median_ms / then[lib.library], gpu, shape, lib.library,
                                       then[lib.library], lib.timing.median_ms))
        if not ratios:
            return None
        per_gpu = {gpu: geomean([r[0] for r in ratios if r[1] == gpu]) or 1.0  # every ratio > 0: never None
                   for gpu in dict.fromkeys(r[1] for r in ratios)}
        gpu = max(per_gpu, key=lambda g: per_gpu[g])
        worst = max(ratios, key=lambda r: r[0])
        return {"ratio": per_gpu[gpu], "gpu": gpu, "per_gpu": per_gpu, "pairs": len(ratios),
                "shapes": [str(s) for s in timed], "worst": [worst[1], str(worst[2]), worst[3], worst[4], worst[5]],
                "restarts": self.pool.restarts}

    def _early_failure(self, p: Prepared, shape: Shape) -> Evaluation | None:
        if p.status is not None:
            return self._result(p.candidate, shape, p.status, p.error, p)
        return None

    def _result(self, c: Candidate, shape: Shape, status: Status, error: str, p: Prepared | None) -> Evaluation:
        res = p.compiled.resources if p and p.compiled else None
        return Evaluation(c.id, shape, status, error, mode=self.cfg.mode, resources=res, backend=self.backend)  # no GPU

    def _store_libraries(self, reply: dict, shape: Shape, *, keep_known: bool = False,
                         alone: bool = False) -> list[LibraryResult]:
        """Store the library timings of a reply. `keep_known`: a baseline this GPU already has stands
        (two jobs of one shape in flight on a cluster may both time it), so that the speedups
        compared in a cell share one baseline per GPU; with `alone` (a library-only job), only one
        timed alone stands: it replaces one timed beside a kernel."""
        libs = [LibraryResult.from_json(d) for d in reply.get("libraries", [])]
        gpu = reply["gpu"]  # every reply names the GPU that produced it
        for lib in libs:
            stored_times = self.library_times(gpu, shape, lib.mode)  # first: the archive's, into the cache added to below
            if keep_known and lib.library in (self._known_alone(gpu, shape, lib.mode) if alone else stored_times):
                continue
            if lib.status != "ok" and lib.library in stored_times:  # a failure does not replace a good timing
                continue
            if self.archive:
                stored.put_baseline(self.archive, gpu, self.backend, shape, lib, alone=alone)
            if lib.status == "ok" and lib.timing:
                self._baselines.setdefault((gpu, shape, lib.mode), {})[lib.library] = lib.timing.median_ms
                if alone:
                    self._alone.setdefault((gpu, shape, lib.mode), set()).add(lib.library)
        return libs

    def _from_reply(self, reply: dict, c: Candidate, shape: Shape, p: Prepared) -> Evaluation:
        if "harness_error" in reply:
            return self._result(c, shape, Status.WORKER_ERROR, reply["harness_error"] + "\n" + reply.get("trace", ""), p)
        k = KernelResult.from_json(reply["kernel"])
        self._store_libraries(reply, shape, keep_known=True)
        self._take_peaks(reply)
        if k.status == Status.OK and k.gpu not in self._peaks:  # its roofline needs them, and none came with it
            self._ensure_peaks()
        timing = k.timing(self.cfg.mode)
        if k.status == Status.OK and timing and timing.median_ms > 0 and not timing.throttled:
            key = (k.gpu, shape)
            self._fastest[key] = min(self._fastest.get(key, timing.median_ms), timing.median_ms)
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


def _launch_on(cand: Candidate, shape: Shape, num_sms: int) -> dict:
    """The kernel's launch on a GPU with `num_sms` SMs (grids and splits depend on it), or why it
    cannot run there: the `launch` or `refuse` part of an evaluate request."""
    decl = cand.declaration
    if not decl.supports(shape, num_sms=num_sms):
        return {"refuse": {"status": str(Status.UNSUPPORTED),
                           "error": "the kernel's '// @evo requires' lines exclude this shape"}}
    try:
        return {"launch": decl.launch_for(shape, num_sms=num_sms).to_json()}
    except LaunchError as e:
        return {"refuse": {"status": str(Status.BAD_LAUNCH), "error": str(e)}}
