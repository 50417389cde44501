"""Parent side: one worker process per GPU; jobs dispatched to idle workers; every failure contained.

A job that sends no message for `stage_timeout_s` (a hang) gets its worker killed and the
status "timeout"; a worker that dies or loses its context is restarted, and the next job is
evaluated normally. The parent never initialises CUDA.
"""
from __future__ import annotations

import collections
import logging
import multiprocessing as mp
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import wait
from typing import Any

from evo.core.errors import GpuUnavailable
from evo.core.records import DeviceInfo, KernelResult, Status

log = logging.getLogger(__name__)


@dataclass
class Job:
    request: dict  # the message to the worker, without "id"
    tag: Any = None  # the caller's handle for this job
    prepare: Callable[[DeviceInfo], dict] | None = field(default=None, repr=False)  # additions for the GPU it runs on
    device: str | None = None  # run only on this GPU (None: any)
    attempts: int = 0  # times the job was lost with its worker through no fault of its own
    lost_waiting: int = 0  # times it was lost while only waiting on a worker, never started (Dask queue)


def visible_gpus() -> list[str]:
    """Device ids of the GPUs this process may use, without initialising CUDA here."""
    env = os.environ.get("CUDA_VISIBLE_DEVICES")
    if env is not None and env.strip():
        return [d.strip() for d in env.split(",") if d.strip() and d.strip() != "-1"]
    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=index", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [ln.strip() for ln in out.stdout.splitlines() if ln.strip().isdigit()] if out.returncode == 0 else []


class _Worker:
    def __init__(self, ctx, device: str, backend: str, start_timeout_s: float):
        from evo.evaluation.worker import worker_main
        self.device = device
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=worker_main, args=(child, device, backend), daemon=True,
                                name=f"evo-worker-{device}")
        self.proc.start()
        child.close()
        if not self.conn.poll(start_timeout_s):
            self.kill()
            raise GpuUnavailable(f"the worker for GPU {device} did not start within {start_timeout_s:g} s")
        msg = self.receive()
        while msg is not None and msg.get("type") == "log":
            msg = self.receive() if self.conn.poll(start_timeout_s) else {"type": "startup_error",
                                                                          "error": "no answer after its start"}
        if msg is None:
            msg = {"type": "startup_error", "error": f"the process exited with code {self.proc.exitcode}"}
        if msg["type"] != "ready":
            self.kill()
            raise GpuUnavailable(f"the worker for GPU {device} could not start: {msg.get('error')}\n{msg.get('trace', '')}")
        self.info = DeviceInfo(**msg["info"])
        self.job: Job | None = None
        self.job_id = 0
        self.deadline = 0.0
        self.stage = ""

    def receive(self) -> dict | None:
        """The next message, or None when the process is gone; log records are passed to this
        process's log on the way (and returned too, so callers can skip them)."""
        try:
            msg = self.conn.recv()
        except (EOFError, OSError):
            return None
        if msg.get("type") == "log":
            relay(msg, self.device)
        return msg

    def kill(self) -> None:
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join(timeout=10)
        self.conn.close()


class WorkerPool:
    def __init__(self, *, backend: str = "gpu", devices: list[str] | None = None, stage_timeout_s: float = 60.0,
                 start_timeout_s: float = 600.0):
        self.backend = backend
        if devices is None or not devices:
            devices = visible_gpus() if backend == "gpu" else ["sim0"]
        if not devices:
            raise GpuUnavailable("no NVIDIA GPU is visible here: run on a GPU machine, or use evaluator=simulated "
                                 "for a dry run with modelled (not measured) times")
        self.devices = [str(d) for d in devices]
        self.stage_timeout_s = stage_timeout_s
        self.start_timeout_s = start_timeout_s
        self._ctx = mp.get_context("spawn")
        self._workers: list[_Worker] = []
        self._next_id = 0
        self.restarts = 0

    def start(self) -> WorkerPool:
        if not self._workers:
            self._workers = [_Worker(self._ctx, d, self.backend, self.start_timeout_s) for d in self.devices]
        return self

    @property
    def infos(self) -> list[DeviceInfo]:
        return [w.info for w in self.start()._workers]

    def close(self) -> None:
        for w in self._workers:
            try:
                w.conn.send({"op": "exit"})
            except (OSError, BrokenPipeError):
                pass
        for w in self._workers:
            w.proc.join(timeout=5)
            w.kill()
        self._workers = []

    def __enter__(self) -> WorkerPool:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def _restart(self, i: int, why: str) -> None:
        old = self._workers[i]
        old.kill()
        self.restarts += 1
        log.warning(f"restarting the worker of GPU {old.device}: {why}")
        self._workers[i] = _Worker(self._ctx, old.device, self.backend, self.start_timeout_s)

    def run(self, jobs: Iterable[Job | None]) -> Iterator[tuple[Job, dict]]:
        """Yield (job, reply) as jobs finish, in completion order. Jobs are pulled from `jobs` only
        when a worker is free, so a generator may still be compiling the later ones."""
        self.start()
        source = iter(jobs)
        pending: collections.deque[Job] = collections.deque()
        exhausted = False
        while True:
            starved = False  # the source has no job ready yet (None): poll the busy workers meanwhile
            for w in self._workers:
                if w.job is not None:
                    continue
                job = next((j for j in pending if j.device in (None, w.device)), None)
                while job is None and not exhausted and not starved:
                    try:
                        new = next(source)
                    except StopIteration:
                        exhausted = True
                        break
                    if new is None:
                        starved = True
                        break
                    if new.device is not None and new.device not in self.devices:
                        raise GpuUnavailable(f"a job asks for GPU {new.device}, which this pool does not have (its GPUs: "
                                             f"{', '.join(self.devices)}): ask for one of those, or for any (device=None)")
                    if new.device in (None, w.device):
                        job = new
                    else:
                        pending.append(new)
                if job is None:
                    continue
                if job in pending:
                    pending.remove(job)
                self._send(w, job)
            busy = [w for w in self._workers if w.job]
            if not busy:
                if exhausted and not pending:
                    return
                continue
            timeout = max(0.0, min(w.deadline for w in busy) - time.monotonic())
            if starved:
                timeout = min(timeout, 0.05)
            ready = wait([w.conn for w in busy], timeout=timeout)
            for i, w in enumerate(self._workers):
                if w.job is None:
                    continue
                if w.conn in ready:
                    msg = w.receive()
                    if msg is None:  # died without a word: could be anything, re-run once
                        job, w.job = w.job, None
                        stage, code = w.stage, w.proc.exitcode
                        self._restart(i, f"its process died during '{stage}' (exit code {code})")
                        if job.attempts == 0:
                            job.attempts += 1
                            pending.appendleft(job)
                            log.warning("re-running the job that was in flight on the lost worker, once")
                        else:
                            yield job, _failure(Status.FAULT, f"the worker process died during '{stage}' (exit code "
                                                              f"{code}), twice for this job", w.info)
                        continue
                    if msg.get("type") == "log":
                        continue
                    if msg.get("id") != w.job_id:
                        continue  # a late message of a job already given up on
                    if msg["type"] == "progress":
                        w.stage, w.deadline = msg["stage"], time.monotonic() + self.stage_timeout_s
                    elif msg["type"] == "result":
                        job, w.job = w.job, None
                        if msg.get("innocent") and job.attempts == 0:  # the context broke before this job
                            job.attempts += 1
                            pending.appendleft(job)
                            self._restart(i, "its GPU context was broken before the job started; re-running it")
                            continue
                        if msg.get("context_lost"):  # before the reply is handed on: the pool stays whole
                            why = ("a harness error" if "harness_error" in msg else
                                   "the kernel faulted and its CUDA context is lost")
                            self._restart(i, why)
                        yield job, msg
                elif time.monotonic() >= w.deadline:
                    job, w.job = w.job, None
                    reply = _failure(Status.TIMEOUT, f"no progress for {self.stage_timeout_s:g} s during "
                                                     f"'{w.stage}' (a hang): the worker was killed", w.info)
                    self._restart(i, "a job timed out")
                    yield job, reply

    def _send(self, w: _Worker, job: Job) -> None:
        self._next_id += 1
        msg = dict(job.request)
        if job.prepare:
            msg.update(job.prepare(w.info))
        msg["id"] = w.job_id = self._next_id
        w.job, w.stage, w.deadline = job, "sent", time.monotonic() + self.stage_timeout_s
        try:
            w.conn.send(msg)
        except (OSError, BrokenPipeError):
            pass  # noticed as a dead worker when its pipe is read

    def call_each(self, request: dict, devices: list[str] | None = None) -> dict[str, dict]:
        """Run one request on every worker (or on those of `devices`); replies by device."""
        jobs = [Job(request, tag=w.device, device=w.device) for w in self.start()._workers
                if devices is None or w.device in devices]
        return {job.tag: reply for job, reply in self.run(jobs)}


def relay(msg: dict, device: str) -> None:
    """A worker's log record, logged here under its own logger name, tagged with its GPU."""
    logging.getLogger(msg["name"]).log(msg["level"], f"[GPU {device}] {msg['message']}")


def _failure(status: Status, error: str, info: DeviceInfo) -> dict:
    return {"type": "result", "gpu": info.key, "libraries": [],
            "kernel": KernelResult(status, error, backend=info.backend, gpu=info.key).to_json()}
