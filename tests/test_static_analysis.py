"""Lint (ruff) and type checks (mypy) over the package, as configured in pyproject.toml.

mypy knows nothing of setuptools' package-dir mapping, so it reads a tree of symbolic links laid
out as the installed package is: evo/ with evo/archive -> archive/, evo/islands -> islands/, ...
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
MAPPED = {"archive": "archive", "islands": "islands", "mutators": "mutators", "conf": "conf"}


def installed_layout(root: Path) -> Path:
    """root/evo: the package as installed, made of links into the checkout."""
    pkg = root / "evo"
    pkg.mkdir()
    for entry in (REPO / "evo").iterdir():
        if entry.name != "__pycache__":
            (pkg / entry.name).symlink_to(entry)
    for name, folder in MAPPED.items():
        (pkg / name).symlink_to(REPO / folder)
    return pkg


def tool(name: str) -> list[str]:
    if shutil.which(name) is None and subprocess.run([sys.executable, "-m", name, "--version"],
                                                     capture_output=True).returncode != 0:
        pytest.fail(f"{name} is not installed: pip install -e '.[test]'")
    return [sys.executable, "-m", name]


def test_ruff_finds_nothing():
    out = subprocess.run([*tool("ruff"), "check", "."], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_mypy_finds_nothing(tmp_path):
    installed_layout(tmp_path)
    out = subprocess.run([*tool("mypy"), "--config-file", str(REPO / "pyproject.toml"), "--cache-dir",
                          str(tmp_path / ".mypy_cache"), "-p", "evo"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:]
