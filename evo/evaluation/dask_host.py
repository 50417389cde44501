"""Inside a Dask worker: the one GPU process this worker owns, and the calls the DaskPool sends it.

Each Dask worker (one per GPU: `--nthreads 1 --resources GPU=1`) holds a one-GPU WorkerPool,
made on first use: the same GPU process, heartbeat, hang kill and restart as on one machine. A
kernel that hangs, faults or crashes takes down only that GPU process (this worker's child),
never the Dask worker, so the scheduler never sees it fail and never retries it elsewhere.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing as mp
import threading
from collections.abc import Iterator
from dataclasses import asdict

from evo.core.errors import GpuUnavailable
from evo.evaluation.pool import Job, WorkerPool, visible_gpus

_lock = threading.Lock()  # one call at a time uses the GPU process (a task, or a call from client.run)
_held: dict[tuple[str, float], WorkerPool] = {}  # this process's pool, by (backend, stage timeout)


def _worker_name() -> str:
    """The name of the Dask worker running the current task."""
    from distributed import get_worker
    return str(get_worker().name)


def _gpu_of_this_worker(backend: str, name: str) -> str:
    if backend == "simulated":
        return f"dask-{name}"
    gpus = visible_gpus()
    if not gpus:
        raise GpuUnavailable(f"Dask worker {name} sees no GPU: give each worker one (CUDA_VISIBLE_DEVICES)")
    return gpus[0]  # as with dask-cuda: a worker's own GPU comes first in its CUDA_VISIBLE_DEVICES


def _pool(backend: str, stage_timeout_s: float, name: str) -> WorkerPool:
    """This worker's GPU pool, started on first use (call with _lock held)."""
    key = (backend, stage_timeout_s)
    if key not in _held:
        if mp.current_process().daemon:
            raise GpuUnavailable("this Dask worker is a daemonic process, which cannot start its GPU process: start "
                                 "the workers with DASK_DISTRIBUTED__WORKER__DAEMON=False in their environment")
        for old in _held.values():  # another configuration before: one GPU process per worker
            old.close()
        _held.clear()
        _held[key] = WorkerPool(backend=backend, devices=[_gpu_of_this_worker(backend, name)],
                                stage_timeout_s=stage_timeout_s).start()
    return _held[key]


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[dict] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append({"level": record.levelno, "name": record.name, "message": record.getMessage()})


@contextlib.contextmanager
def _collected() -> Iterator[list[dict]]:
    """`evo` log records made here (the GPU process's included), handed back to the driver's log."""
    root, handler = logging.getLogger("evo"), _Collect()
    if root.getEffectiveLevel() > logging.INFO:
        root.setLevel(logging.INFO)
    root.addHandler(handler)
    try:
        yield handler.records
    finally:
        root.removeHandler(handler)


def run_job(request: dict, additions: dict[str, dict] | None, backend: str, stage_timeout_s: float,
            name: str | None = None) -> dict:
    """Evaluate one request on this worker's GPU. `additions` holds what the driver computed for
    each GPU it knows (the launch for its SM count, the libraries still to time there); a GPU it
    does not know yet answers "unprepared" with its DeviceInfo, and the driver sends the job again."""
    name = name or _worker_name()
    _mark_started()
    with _lock, _collected() as records:
        pool = _pool(backend, stage_timeout_s, name)
        info = pool.infos[0]
        if additions is not None:
            if info.key not in additions:
                return {"type": "unprepared", "info": asdict(info)}
            request = {**request, **additions[info.key]}
        before = pool.restarts
        ((_, reply),) = list(pool.run([Job(request)]))
    return {**reply, "host_restarts": pool.restarts - before, "host_log": records, "host": name}


STARTED = "evo-job-started"  # the scheduler's event topic: keys of jobs that began on a worker


def _mark_started() -> None:
    """Tell the scheduler this job began (its key under STARTED), so that a job lost with its worker
    while only waiting there is told apart from one that was running. Not on a Dask worker: nothing."""
    try:
        import distributed
        worker = distributed.get_worker()
        worker.log_event(STARTED, worker.get_current_task())
    except (ImportError, ValueError):
        pass


def _info(backend: str, stage_timeout_s: float, name: str) -> dict:
    pool = _held.get((backend, stage_timeout_s))
    if pool is None:
        with _lock:
            pool = _pool(backend, stage_timeout_s, name)
    return asdict(pool.infos[0])


# For client.run, which passes the worker as `dask_worker`: the work runs in a thread, off the
# worker's event loop, which must keep answering the scheduler while a GPU process starts.

async def host_info(backend: str, stage_timeout_s: float, dask_worker=None) -> dict:
    """This worker's DeviceInfo."""
    return await asyncio.to_thread(_info, backend, stage_timeout_s, str(dask_worker.name))


async def call_on_host(request: dict, backend: str, stage_timeout_s: float, dask_worker=None) -> dict:
    """One request (e.g. peaks) on this worker's GPU."""
    return await asyncio.to_thread(run_job, request, None, backend, stage_timeout_s, str(dask_worker.name))
