"""The one interface the evaluator has to its GPUs, and the choice of implementation.

Two pools implement it: `WorkerPool` (pool.py: one GPU process per local GPU, the default) and
`DaskPool` (dask_pool.py: one Dask worker per GPU, on this machine or across a cluster, each
owning the same GPU process). `evaluator.cluster` picks: null -> WorkerPool, `local` or
`tcp://ADDRESS` -> DaskPool.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Protocol

from evo.core.records import DeviceInfo
from evo.evaluation.pool import Job, WorkerPool

if TYPE_CHECKING:
    from evo.config import EvaluatorConfig


class Pool(Protocol):
    """GPUs that evaluate JSON requests, each in a process of its own that a hang, a fault or a
    crash can take down without touching the caller or the other GPUs."""

    restarts: int  # GPU processes replaced after a hang, a fault or a crash

    def start(self) -> Pool: ...

    @property
    def devices(self) -> list[str]:
        """The pool's GPUs, by the ids `call_each` answers with."""
        ...

    @property
    def infos(self) -> list[DeviceInfo]:
        """One DeviceInfo per GPU, in the order of `devices` (starts the pool)."""
        ...

    def run(self, jobs: Iterable[Job | None]) -> Iterator[tuple[Job, dict]]:
        """Yield (job, reply) as jobs finish, in completion order; jobs are pulled lazily. The source
        may yield None for "nothing ready yet" (a compile or an LLM answer still pending): the pool then
        collects finished jobs meanwhile and asks again."""
        ...

    def call_each(self, request: dict, devices: list[str] | None = None) -> dict[str, dict]:
        """Run one request on every GPU (or on `devices`); replies by device id."""
        ...

    def close(self) -> None: ...


def make_pool(cfg: EvaluatorConfig) -> Pool:
    """The pool `cfg.cluster` asks for."""
    if not cfg.cluster:
        return WorkerPool(backend=cfg.backend, devices=[str(g) for g in cfg.gpus] or None, stage_timeout_s=cfg.timeout_s)
    from evo.evaluation.dask_pool import DaskPool
    return DaskPool(cfg.cluster, backend=cfg.backend, stage_timeout_s=cfg.timeout_s, local_workers=cfg.cluster_workers,
                    gpus=[str(g) for g in cfg.gpus], queue=cfg.cluster_queue)
