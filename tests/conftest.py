"""Shared fixtures. GPU tests are marked `gpu` and skipped, with the reason shown, without a GPU."""
import os
import shutil
import subprocess

import pytest


def _gpu_count() -> int:
    if not shutil.which("nvidia-smi"):
        return 0
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


GPUS = _gpu_count()


def pytest_collection_modifyitems(config, items):
    if GPUS:
        return
    skip = pytest.mark.skip(reason="needs an NVIDIA GPU: nvidia-smi lists none on this machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def compile_cache(tmp_path_factory):
    """One nvcc cache for the whole test run: each distinct kernel is compiled once."""
    path = tmp_path_factory.mktemp("nvcc-cache")
    old = os.environ.get("EVO_CACHE_DIR")
    os.environ["EVO_CACHE_DIR"] = str(path)
    yield path
    if old is None:
        os.environ.pop("EVO_CACHE_DIR", None)
    else:
        os.environ["EVO_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def compiler(compile_cache):
    from evo.evaluation.compiler import Compiler
    c = Compiler(cache_dir=compile_cache, timeout_s=300)
    yield c
    c.close()


@pytest.fixture
def llm_env(monkeypatch, tmp_path):
    """An API key for the LLM tests (their server is tests/fake_anthropic.py) and an archive with a run."""
    from evo.archive import Archive
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    archive = Archive.open(tmp_path / "llm.sqlite")
    yield archive, archive.start_run(kind="test", config={}, seed=0, backend="simulated")
    archive.close()
