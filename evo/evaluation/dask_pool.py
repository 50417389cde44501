"""The pool over a Dask cluster: one Dask worker per GPU, on this machine or across hosts.

`evaluator.cluster=local` starts a cluster here (one worker per visible GPU); `tcp://HOST:PORT`
joins a running scheduler (e.g. one started by dask-jobqueue on SLURM; see conf/cluster/). Each
Dask worker owns one GPU process (dask_host.py), so hangs, faults and crashes are contained and
restarted on that host exactly as by the local WorkerPool, and a faulting kernel is never
retried elsewhere. Jobs ask for the resource {"GPU": 1}; none is pinned to a worker, so a worker
that joins mid-run gets work and a lost one is not waited for.

Each GPU worker holds its running job and up to `queue` more (evaluator.cluster_queue, 1 by
default), so that when a job ends the next one is already on that worker: the GPU does not sit
idle for the round trip of a result to the driver and of the next job to the worker. A job that
asks for a resource is never held back in the scheduler's own queue (distributed's
worker-saturation applies only to tasks without restrictions): the scheduler gives it to a worker
at once, which keeps it ("constrained") until its GPU is free.

Losing a Dask worker (its host, its process) loses only the jobs on it, running or waiting there:
the scheduler is told not to retry on its own (allowed_failures=0), and this pool sends each of
them again, counted in `reruns` and logged. A job that was running gets one re-run, and is
reported as a fault if lost again; one that was only waiting (it never told the scheduler it
started) does not use that re-run, up to MAX_LOST_WAITING times, so a job that kills its workers
cannot make an innocent job queued behind it a fault. Archive
writes stay in the driver: the pool only yields (job, reply) pairs.
"""
from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from evo.core.errors import ConfigError, GpuUnavailable
from evo.core.extras import install_hint
from evo.core.records import DeviceInfo, Status
from evo.evaluation import dask_host
from evo.evaluation.pool import Job, _failure, visible_gpus

log = logging.getLogger(__name__)
START_TIMEOUT_S = 600.0  # for the first GPU worker to join, and for a GPU process to start
WORKERS_EVERY_S = 0.5  # the scheduler's list of workers is re-read at most this often while jobs run
STARVED_WAIT_S = 0.05  # when the source has nothing ready: wait this long for a job to finish, then ask again
MAX_LOST_WAITING = 3  # a job lost this often while only waiting on a worker then counts as lost while running


def require_distributed() -> Any:
    try:
        import distributed
    except ImportError:
        raise ConfigError("evaluator.cluster needs Dask (dask and distributed; dask-jobqueue for SLURM/PBS): "
                          f"{install_hint('cluster')}, or leave evaluator.cluster unset for this machine's GPUs") from None
    return distributed


def start_local_cluster(backend: str, workers: int = 0, gpus: list[str] | None = None) -> Any:
    """A Dask cluster on this machine: one single-threaded worker per GPU, each with GPU=1 and
    CUDA_VISIBLE_DEVICES set to its GPU (the simulated backend: `workers` workers, 2 by default).
    Workers are not daemonic, so that they can start their GPU process."""
    distributed = require_distributed()
    import dask
    if backend == "gpu":
        devices = gpus or visible_gpus()
        if not devices:
            raise GpuUnavailable("evaluator.cluster=local: no NVIDIA GPU is visible here")
        envs = [{"CUDA_VISIBLE_DEVICES": d} for d in (devices[:workers] if workers else devices)]
    else:
        envs = [{} for _ in range(workers or 2)]
    quiet = {"distributed.worker.daemon": False, "distributed.scheduler.allowed-failures": 0,
             "logging.distributed": "warning"}  # Dask's own start/stop chatter stays out of the run's log
    logging.getLogger("distributed").setLevel(logging.WARNING)
    with dask.config.set(quiet):
        spec = {f"gpu{i}": {"cls": distributed.Nanny, "options": {"nthreads": 1, "resources": {"GPU": 1}, "env": env,
                                                                   "host": "127.0.0.1", "silence_logs": logging.WARNING}}
                for i, env in enumerate(envs)}
        scheduler = {"cls": distributed.Scheduler, "options": {"host": "127.0.0.1", "port": 0,
                                                                "dashboard_address": "127.0.0.1:0"}}
        return distributed.SpecCluster(workers=spec, scheduler=scheduler, name="evo")


def _no_automatic_retries(dask_scheduler=None) -> int:
    """On the scheduler: a task lost with its worker is failed at once (KilledWorker), so that the
    driver decides about the one re-run; returns the previous setting."""
    before = dask_scheduler.allowed_failures
    dask_scheduler.allowed_failures = 0
    return before


class DaskPool:
    def __init__(self, address: str, *, backend: str = "gpu", stage_timeout_s: float = 60.0, local_workers: int = 0,
                 gpus: list[str] | None = None, queue: int = 1):
        if queue < 0:
            raise ConfigError(f"evaluator.cluster_queue={queue}: give 0 or more jobs waiting on each GPU worker")
        self._distributed = require_distributed()
        self.address = address
        self.backend = backend
        self.stage_timeout_s = stage_timeout_s
        self.local_workers = local_workers
        self.gpus = gpus or []
        self.queue = queue  # jobs waiting on each GPU worker beyond the one it runs
        self.restarts = 0  # GPU processes replaced on the hosts (hangs, faults, crashes)
        self.reruns = 0  # jobs sent again because their Dask worker was lost
        self._cluster: Any = None
        self._client: Any = None
        self._hosts: dict[str, DeviceInfo] = {}  # Dask worker address -> its GPU
        self._workers_seen: dict[str, dict] = {}  # the scheduler's GPU workers, as last read
        self._workers_read_at = float("-inf")

    # ---- setup ----------------------------------------------------------------------------
    def start(self) -> DaskPool:
        if self._client is not None:
            return self
        address = self.address
        if address == "local":
            self._cluster = start_local_cluster(self.backend, self.local_workers, self.gpus)
            address = self._cluster.scheduler_address
        self._client = self._distributed.Client(address, timeout=60, set_as_default=False)
        before = self._client.run_on_scheduler(_no_automatic_retries)
        if before:
            log.info(f"the scheduler's allowed-failures was {before}: set to 0 (evo re-runs a lost job once itself)")
        dashboard = (self._client.dashboard_link + " (its pages need bokeh where the scheduler runs)"
                     if "dashboard" in self._client.scheduler_info()["services"] else "none")
        log.info(f"Dask scheduler {address}; dashboard: {dashboard}")
        self._client.wait_for_workers(1, timeout=START_TIMEOUT_S)
        self._refresh()
        return self

    def _gpu_workers(self) -> dict[str, dict]:
        """The scheduler's GPU workers, read now (a call to the scheduler)."""
        workers = self._client.scheduler_info(n_workers=-1)["workers"]
        self._workers_seen = {a: w for a, w in workers.items() if w.get("resources", {}).get("GPU")}
        self._workers_read_at = time.monotonic()
        return self._workers_seen

    def _recent_workers(self) -> dict[str, dict]:
        """The GPU workers as read at most WORKERS_EVERY_S ago (re-read also on a lost worker or a
        GPU not known yet): a worker that joins is seen within that time, not on every result."""
        if time.monotonic() - self._workers_read_at >= WORKERS_EVERY_S:
            return self._gpu_workers()
        return self._workers_seen

    def _refresh(self, current: dict[str, dict] | None = None) -> None:
        """Forget workers that left; learn the GPU of those that joined (starting their GPU process)."""
        current = self._gpu_workers() if current is None else current
        self._hosts = {a: i for a, i in self._hosts.items() if a in current}
        new = [a for a in current if a not in self._hosts]
        if not new:
            return
        got = self._client.run(dask_host.host_info, self.backend, self.stage_timeout_s, workers=new, on_error="return")
        for address, info in sorted(got.items()):
            if isinstance(info, BaseException):
                if isinstance(info, GpuUnavailable):  # a worker that cannot work: say why, do not guess
                    raise info
                log.warning(f"Dask worker {address} did not say which GPU it has ({type(info).__name__}: {info})")
                continue
            self._hosts[address] = DeviceInfo(**info)
            log.info(f"Dask worker {current[address].get('name', address)} at {address}: {self._hosts[address].name}")

    @property
    def devices(self) -> list[str]:
        return list(self.start()._hosts)

    @property
    def infos(self) -> list[DeviceInfo]:
        """The GPUs known so far (workers that join are learned when jobs are sent or answered)."""
        return list(self.start()._hosts.values())

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None
        self._hosts = {}
        self._workers_seen, self._workers_read_at = {}, float("-inf")

    def __enter__(self) -> DaskPool:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- work -----------------------------------------------------------------------------
    def _submit(self, job: Job, workers: dict[str, dict]) -> Any:
        """Send a job to any GPU worker; `workers`: the scheduler's GPU workers as last seen."""
        if job.device is not None:
            raise GpuUnavailable(f"a job asks for GPU {job.device}, but jobs on a Dask cluster go to any GPU worker "
                                 "(a pinned job would wait forever for a worker that is gone): leave device=None")
        if job.prepare is not None and set(workers) != set(self._hosts):
            self._refresh(workers)
        additions = {i.key: job.prepare(i) for i in self._hosts.values()} if job.prepare else None
        return self._client.submit(dask_host.run_job, job.request, additions, self.backend, self.stage_timeout_s,
                                   resources={"GPU": 1}, pure=False, key=f"evo-job-{uuid.uuid4().hex}")

    def run(self, jobs: Iterable[Job | None]) -> Iterator[tuple[Job, dict]]:
        """Yield (job, reply) as jobs finish, in completion order. Up to 1 + `queue` jobs per GPU
        worker are sent (re-counted as workers come and go): each worker has its next job at hand
        when one ends, the rest wait in the driver (not on a worker that may be lost), and later
        jobs can still be compiling."""
        self.start()
        source = iter(jobs)
        exhausted = False
        in_flight: dict[Any, Job] = {}
        done = self._distributed.as_completed(loop=self._client.loop)
        self._gpu_workers()  # read now: a worker that joined since the last run gets work from the start
        while True:
            workers = self._recent_workers()  # workers come and go; read again at most every WORKERS_EVERY_S
            starved = False  # the source has no job ready yet (None)
            while not exhausted and len(in_flight) < max(1, len(workers)) * (1 + self.queue):
                try:
                    job = next(source)
                except StopIteration:
                    exhausted = True
                    break
                if job is None:
                    starved = True
                    break
                future = self._submit(job, workers)
                in_flight[future] = job
                done.add(future)
            if not in_flight:
                if exhausted:
                    return
                continue
            if starved and not done.has_ready():  # collect a finished job meanwhile, or ask the source again
                until = time.monotonic() + STARVED_WAIT_S  # (distributed.wait needs a default client)
                while not done.has_ready() and time.monotonic() < until:
                    time.sleep(0.005)
                continue
            future = next(done)
            job = in_flight.pop(future)
            reply = self._reply(future, job)
            future.release()
            if reply is None:  # sent again (the workers were read again in _reply)
                future = self._submit(job, self._workers_seen)
                in_flight[future] = job
                done.add(future)
                continue
            yield job, reply

    def _reply(self, future: Any, job: Job) -> dict | None:
        """The job's reply, or None when it must be sent again (lost once, or met a GPU not known yet)."""
        try:
            reply = future.result()
        except self._distributed.KilledWorker as e:
            lost = self._hosts.get(getattr(e.last_worker, "address", ""))
            where = f"Dask worker {getattr(e.last_worker, 'name', '?')}"
            if not self._started(future.key) and job.lost_waiting < MAX_LOST_WAITING:
                job.lost_waiting += 1  # it never ran: not held against it (its one re-run is kept)
                self.reruns += 1
                log.warning(f"{where} was lost with a job waiting on it (not started yet): sending that job again "
                            f"({self.reruns} re-run(s) in this pool)")
                self._gpu_workers()
                return None
            if job.attempts == 0:
                job.attempts += 1
                self.reruns += 1
                log.warning(f"{where} was lost with a job running on it: re-running that job "
                            f"once elsewhere ({self.reruns} re-run(s) in this pool)")
                if not self._gpu_workers():
                    log.warning("no GPU worker is left in the cluster: waiting for one to join")
                return None
            info = lost or DeviceInfo("?", "?", 0, 0, 0, backend=self.backend)
            return _failure(Status.FAULT, f"lost with its Dask worker twice (last: {where})", info)
        if reply.get("type") == "unprepared":
            self._refresh()
            return None
        return self._unwrap(reply)

    def _started(self, key: str) -> bool:
        """Whether the job under `key` began on a worker (its start event reached the scheduler).
        When the events cannot be read, it counts as started (the safe side: one re-run)."""
        try:
            return any(msg == key for _, msg in self._client.get_events(dask_host.STARTED))
        except Exception:  # noqa: BLE001 -- a scheduler that cannot answer: assume the worst
            return True

    def _unwrap(self, reply: dict) -> dict:
        """The GPU's reply, with the host's restarts counted and its log records relayed here."""
        self.restarts += reply.pop("host_restarts", 0)
        host = reply.pop("host", "?")
        for r in reply.pop("host_log", []):
            logging.getLogger(r["name"]).log(r["level"], f"[{host}] {r['message']}")
        return reply

    def call_each(self, request: dict, devices: list[str] | None = None) -> dict[str, dict]:
        """Run one request on every GPU worker (or on `devices`, worker addresses); replies by address.
        Sent with client.run (outside the task queue), so it reaches exactly those workers."""
        self.start()
        got = self._client.run(dask_host.call_on_host, request, self.backend, self.stage_timeout_s,
                               workers=devices or list(self._hosts))
        return {address: self._unwrap(reply) for address, reply in got.items()}
