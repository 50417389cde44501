"""The GPU worker process: one per GPU, fed requests through a pipe by the WorkerPool.

Messages in:  {"op": "evaluate" | "peaks" | "exit", "id": ..., ...}; an evaluate request carries either
the kernel's "launch" for this GPU or "refuse": {"status", "error"} when the kernel cannot run here,
and "peaks": true when the driver does not know this GPU's peaks yet (they come back with the result).
Messages out: {"type": "ready", "info": DeviceInfo} once, then for each request any number of
{"type": "progress", "id", "stage"} and one {"type": "result", "id", ...}; at any time
{"type": "log", "level", "name", "message"} carries a log record to the parent's log. After a fault
the worker answers, then exits: its CUDA context cannot be trusted any more.
"""
from __future__ import annotations

import ctypes
import logging
import multiprocessing as mp
import os
import signal
import sys
import traceback
from dataclasses import asdict
from typing import Any

from evo.core.records import KernelResult, Status
from evo.evaluation import steps
from evo.evaluation.faults import ContextLost, is_cuda_error


class PipeLogHandler(logging.Handler):
    """Sends this process's `evo` log records to the parent, which logs them as its own."""

    def __init__(self, conn) -> None:
        super().__init__(logging.DEBUG)
        self.conn = conn

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.conn.send({"type": "log", "level": record.levelno, "name": record.name,
                            "message": record.getMessage()})
        except Exception:  # the parent is gone: nobody to tell
            pass


def die_with_parent() -> None:
    """Linux: end this process when the one that started it dies (a driver or a Dask worker killed
    outright), so that a hung kernel does not keep its GPU busy beside the worker's replacement.
    (The signal follows the thread that started this process: pools start GPU processes from
    long-lived threads, the caller's or Dask's executor threads.)"""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    parent = mp.parent_process()
    if parent is not None and os.getppid() != parent.pid:  # it died before the line above
        os._exit(0)


def _peaks_beside(harness, progress) -> dict:
    """This GPU's peaks, measured after a job for a driver that does not know them yet; {} when the
    measurement fails (the job's own result stands; the driver then asks for them separately)."""
    progress("peaks")  # a stage of its own: a slow measurement is not charged to the kernel's stage
    try:
        return {"peaks": asdict(harness.peaks())}
    except Exception as e:  # noqa: BLE001 -- not the kernel's failure: report it and carry on
        logging.getLogger(__name__).warning(f"measuring this GPU's peaks beside a job failed: {type(e).__name__}: {e}")
        return {}


def worker_main(conn, device: str, backend: str = "gpu") -> None:
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it stops the workers
    os.environ["CUDA_VISIBLE_DEVICES"] = str(device)  # before CUDA is initialised in this process
    os.environ.setdefault("CUDA_MODULE_LOADING", "LAZY")
    root = logging.getLogger("evo")
    root.addHandler(PipeLogHandler(conn))
    root.setLevel(logging.DEBUG)
    root.propagate = False
    log = logging.getLogger(__name__)
    harness: Any
    try:
        if backend == "simulated":
            from evo.evaluation.simulated import SimulatedHarness
            harness = SimulatedHarness(device)
        else:
            from evo.evaluation.gpu_harness import GpuHarness
            harness = GpuHarness()
    except Exception as e:
        conn.send({"type": "startup_error", "error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()})
        return
    log.info(f"worker ready on {harness.info.name} (pid {os.getpid()})")
    conn.send({"type": "ready", "info": asdict(harness.info)})
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        op, rid = msg.get("op"), msg.get("id")
        if op == "exit":
            return
        log.debug(f"request {rid}: {op} {msg.get('shape', '')}")

        def progress(stage: str, rid=rid) -> None:
            conn.send({"type": "progress", "id": rid, "stage": stage})

        if op == "evaluate" and msg.get("refuse"):  # the launch cannot run on this GPU (its SM count): no GPU work
            refused = KernelResult(Status(msg["refuse"]["status"]), msg["refuse"]["error"], backend=backend,
                                   gpu=harness.info.key)
            conn.send({"type": "result", "id": rid, "gpu": harness.info.key, "kernel": refused.to_json(), "libraries": []})
            continue
        try:
            if op == "evaluate" and not harness.healthy():  # broken before this job: not its fault
                conn.send({"type": "result", "id": rid, "gpu": harness.info.key, "context_lost": True,
                           "innocent": True, "harness_error": "the GPU context was already broken"})
                os._exit(3)
            if op == "evaluate":
                profile = steps.begin(getattr(harness, "sync", None))  # EVO_PROFILE: where its time goes
                payload = harness.evaluate(msg, progress)
                profile.note(shape=msg.get("shape"), kernel=msg.get("cubin") is not None,
                             libraries=list(msg.get("libraries") or []),
                             status=(payload.get("kernel") or {}).get("status"))
                profile.write()
                if msg.get("peaks"):  # a GPU new to the driver (it joined a cluster): its peaks, after the job
                    payload.update(_peaks_beside(harness, progress))
            elif op == "peaks":
                payload = {"peaks": asdict(harness.peaks())}
            else:
                payload = {"error": f"unknown op {op!r}"}
            conn.send({"type": "result", "id": rid, "gpu": harness.info.key, **payload})
        except ContextLost as e:
            conn.send({"type": "result", "id": rid, "gpu": harness.info.key, "kernel": e.result.to_json(),
                       "libraries": [], "context_lost": True})
            sys.stdout.flush()
            os._exit(3)
        except Exception as e:
            if is_cuda_error(e):  # a CUDA error the harness did not classify: still the kernel's
                result = KernelResult(Status.FAULT, f"the kernel faulted: {type(e).__name__}: {e}"[:2000],
                                      backend=backend, gpu=harness.info.key, launch=msg.get("launch"))
                conn.send({"type": "result", "id": rid, "gpu": harness.info.key, "kernel": result.to_json(),
                           "libraries": [], "context_lost": True})
            else:  # evo's own trouble: report it, and start afresh
                log.error(f"harness error on request {rid}: {type(e).__name__}: {e}")
                conn.send({"type": "result", "id": rid, "gpu": harness.info.key, "context_lost": True,
                           "harness_error": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()[-3000:]})
            sys.stdout.flush()
            os._exit(3)
