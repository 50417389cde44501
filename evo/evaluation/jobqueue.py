"""Dask clusters on batch systems (SLURM, PBS) through dask-jobqueue, described by a YAML file
such as conf/cluster/slurm.yaml: `kind`, `jobs`, and `options` for the dask-jobqueue class."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from evo.core.errors import ConfigError
from evo.core.extras import install_hint

KINDS = {"slurm": "SLURMCluster", "pbs": "PBSCluster"}
SUBMIT = {"slurm": "sbatch", "pbs": "qsub"}  # the command each batch system submits jobs with


def check_submit(spec: dict) -> None:
    """Refuse before anything starts where the batch system's submit command is missing: dask-jobqueue
    would otherwise start a scheduler, fail to submit in the background, and wait forever."""
    command = SUBMIT[spec["kind"]]
    if shutil.which(command) is None:
        raise ConfigError(f"`{command}` is not on PATH: run `evo cluster` on a {spec['kind'].upper()} login node "
                          f"(`--job-script` prints the job script anywhere)")


def read_spec(path: str | Path) -> dict:
    """The cluster description, checked: {"kind", "jobs", "options"}."""
    from omegaconf import OmegaConf
    p = Path(path)
    if not p.is_file():
        from importlib import resources
        example = resources.files("evo.conf").joinpath("cluster", "slurm.yaml")
        raise ConfigError(f"{p}: no such cluster description (copy and edit the example installed with evo: {example})")
    spec = OmegaConf.to_container(OmegaConf.load(p), resolve=True)
    if not isinstance(spec, dict) or spec.get("kind") not in KINDS:
        raise ConfigError(f"{p}: `kind` must be one of {', '.join(KINDS)}")
    if not isinstance(spec.get("jobs", 1), int) or spec.get("jobs", 1) < 0:
        raise ConfigError(f"{p}: `jobs` must be a whole number >= 0")
    return {"kind": spec["kind"], "jobs": spec.get("jobs", 1), "options": dict(spec.get("options") or {})}


def make_cluster(spec: dict) -> Any:
    """The dask-jobqueue cluster of a description, its scheduler started here, no job submitted yet.
    A task lost with its worker fails at once, so that evo re-runs it once itself."""
    try:
        import dask
        import dask_jobqueue
    except ImportError:
        raise ConfigError(f"a batch-system cluster needs dask-jobqueue: {install_hint('cluster')}") from None
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        return getattr(dask_jobqueue, KINDS[spec["kind"]])(**spec["options"])
