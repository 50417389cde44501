"""The wheel is the product: build it, install it into a fresh venv, and use it from outside the repo.

The repository's top-level folders `archive/`, `islands/`, `mutators/`, `conf/` install as
`evo.archive`, `evo.islands`, `evo.mutators`, `evo.conf` (setuptools `package-dir`). Everything
else in the suite runs against the editable install, where a file missing from the wheel, a
top-level `archive`/`conf` import or a path computed from the repo layout still works. This module
builds the wheel once (from a copy of the source tree, so a stale `build/lib` cannot leak deleted
files into it and the working tree is not written to), installs it with its dependencies into a
new venv, and runs the installed `evo` from a temporary directory with the repo off every path.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import tomllib
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]

# repository folder -> where it lands inside the wheel
PACKAGE_DIRS = {"evo": "evo", "archive": "evo/archive", "islands": "evo/islands",
                "mutators": "evo/mutators", "conf": "evo/conf"}

# Not copied for the build: VCS data, venvs, build outputs, caches, run outputs.
_SKIP_TOP = {".git", ".venv", "venv", "build", "dist", "runs", "outputs", "exported", ".whl",
             ".pytest_cache", ".ruff_cache", ".mypy_cache", ".tox", ".nox"}
_SKIP_ANY = ("__pycache__", "*.egg-info", "*.pyc", "*.pyo")

# Every one of these files decides whether the installed package works.
REQUIRED_IN_WHEEL = [
    "evo/__init__.py",
    "evo/py.typed",
    "evo/archive/store.py",
    "evo/islands/population.py",
    "evo/mutators/structural.py",
    "evo/mutators/llm/prompts.py",
    "evo/mutators/prompts/_system.md",
    "evo/conf/config.yaml",
    "evo/conf/shapes/smoke.yaml",
    "evo/families/hopper.cu",
    "evo/families/splitk.cuh",
    "evo/evaluation/selftest_kernels/good.cu",
]

IMPORTED = ["evo", "evo.core", "evo.config", "evo.archive", "evo.islands", "evo.mutators",
            "evo.mutators.llm", "evo.conf", "evo.evaluation", "evo.families", "evo.search",
            "evo.cli", "evo.export", "evo.report", "evo.dispatch"]

# What the repo's top-level folders must NOT be importable as once installed.
TOP_LEVEL_NAMES = ["archive", "islands", "mutators", "conf"]


@dataclass
class Installed:
    wheel: Path
    venv: Path
    work: Path  # a cwd outside the repository
    env: dict[str, str] = field(repr=False)  # kept out of tracebacks: it may hold API keys

    def bin(self, name: str) -> Path:
        return self.venv / "bin" / name


def _fail(what: str, proc: subprocess.CompletedProcess) -> None:
    def tail(s: str, n: int = 6000) -> str:
        s = s or ""
        return s if len(s) <= n else "...\n" + s[-n:]
    pytest.fail(f"{what} failed (exit {proc.returncode}): {' '.join(map(str, proc.args))}\n"
                f"--- stderr ---\n{tail(proc.stderr)}\n--- stdout ---\n{tail(proc.stdout)}", pytrace=False)


def _run(cmd: list, what: str, *, cwd: Path, env: dict[str, str] | None = None,
         timeout: float = 600) -> subprocess.CompletedProcess:
    """Run `cmd`; fail the test with its stderr and stdout unless it exits 0."""
    try:
        proc = subprocess.run([str(c) for c in cmd], check=False, capture_output=True, text=True,
                              timeout=timeout, cwd=cwd, env=env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as e:
        def text(b: str | bytes | None) -> str:
            return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
        pytest.fail(f"{what} timed out after {timeout:.0f} s: {' '.join(map(str, cmd))}\n"
                    f"--- stderr ---\n{text(e.stderr)[-6000:]}\n--- stdout ---\n{text(e.stdout)[-6000:]}",
                    pytrace=False)
    if proc.returncode != 0:
        _fail(what, proc)
    return proc


def _inside(path: str | Path, root: Path) -> bool:
    return Path(os.path.realpath(path)).is_relative_to(os.path.realpath(root))


def _copy_source(dest: Path) -> Path:
    def ignore(folder: str, names: list[str]) -> set[str]:
        skip = {n for n in names if any(Path(n).match(p) for p in _SKIP_ANY)}
        if Path(folder).resolve() == REPO:
            skip |= {n for n in names if n in _SKIP_TOP}
        return skip
    shutil.copytree(REPO, dest, ignore=ignore, symlinks=True)
    return dest


def _build_isolated() -> bool:
    """Build without an isolated env when this interpreter already has the build requirements
    (fast, offline); otherwise `python -m build` makes one and pip fetches setuptools (cached)."""
    try:
        from packaging.requirements import Requirement
    except ImportError:
        return True
    requires = tomllib.loads((REPO / "pyproject.toml").read_text())["build-system"]["requires"]
    for spec in requires:
        req = Requirement(spec)
        try:
            have = importlib.metadata.version(req.name)
        except importlib.metadata.PackageNotFoundError:
            return True
        if not req.specifier.contains(have, prereleases=True):
            return True
    return False


def _clean_env(venv: Path) -> dict[str, str]:
    """The caller's environment minus anything that would let the repo's files be found."""
    env = {}
    for key, value in os.environ.items():
        if key in {"PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE", "VIRTUAL_ENV",
                   "PYTHONSAFEPATH", "__PYVENV_LAUNCHER__"}:
            continue
        if key == "PATH":
            continue
        if str(REPO) in value:
            continue
        env[key] = value
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and not _inside(p, REPO)]
    nvcc = _nvcc()
    if nvcc and str(Path(nvcc).parent) not in path:
        path.append(str(Path(nvcc).parent))
    env["PATH"] = os.pathsep.join([str(venv / "bin"), *path])
    env["VIRTUAL_ENV"] = str(venv)
    env["PYTHONNOUSERSITE"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _nvcc() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    cuda = Path("/usr/local/cuda/bin/nvcc")
    return str(cuda) if cuda.exists() else None


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    root = tmp_path_factory.mktemp("packaging")
    assert not _inside(root, REPO), f"the temporary directory {root} is inside the repository"
    src = _copy_source(root / "src")
    dist = root / "dist"

    if importlib.util.find_spec("build") is not None:
        cmd = [sys.executable, "-m", "build", "--wheel", "--outdir", dist]
        if not _build_isolated():
            fast = subprocess.run([*cmd, "--no-isolation", src], check=False, capture_output=True, cwd=src,
                                  stdin=subprocess.DEVNULL, timeout=600)
            if fast.returncode != 0:  # e.g. an old setuptools that also wants `wheel`: isolate after all
                shutil.rmtree(dist, ignore_errors=True)
                _run([*cmd, src], "building the wheel", cwd=src)
        else:
            _run([*cmd, src], "building the wheel", cwd=src)
    else:
        _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", dist, src], "building the wheel", cwd=src)
    wheels = sorted(dist.glob("*.whl"))
    assert len(wheels) == 1, f"expected one wheel in {dist}, found {[w.name for w in wheels]}"

    venv = root / "venv"
    _run([sys.executable, "-m", "venv", venv], "creating a venv", cwd=root)
    work = root / "work"
    work.mkdir()
    env = _clean_env(venv)
    _run([venv / "bin" / "python", "-m", "pip", "install", "--quiet", wheels[0]],
         "installing the wheel with its dependencies", cwd=work, env=env, timeout=900)
    return Installed(wheel=wheels[0], venv=venv, work=work, env=env)


def _names(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as z:
        return set(z.namelist())


def test_wheel_contents(installed: Installed) -> None:
    names = _names(installed.wheel)
    missing = [f for f in REQUIRED_IN_WHEEL if f not in names]
    templates = sorted(p.name for p in (REPO / "evo" / "templates").glob("*.j2"))
    missing += [f"evo/templates/{t}" for t in templates if f"evo/templates/{t}" not in names]
    assert not missing, f"{installed.wheel.name} lacks {missing}"

    # Every module and every data file the code loads, from each mapped folder.
    data = {".cu", ".cuh", ".yaml", ".yml", ".j2", ".typed"}
    expected = []
    for folder, target in PACKAGE_DIRS.items():
        for f in sorted((REPO / folder).rglob("*")):
            rel = f.relative_to(REPO / folder)
            if not f.is_file() or "__pycache__" in rel.parts or any(p.endswith(".egg-info") for p in rel.parts):
                continue
            if f.suffix in {".py", *data} or (rel.parts[0] == "prompts" and f.suffix == ".md"):
                expected.append(f"{target}/{rel.as_posix()}")
    missing = [f for f in expected if f not in names]
    assert not missing, f"{installed.wheel.name} lacks files that are in the repository: {missing}"

    stray = sorted(n for n in names
                   if n.split("/")[0] in {*TOP_LEVEL_NAMES, "tests", "benchmarks", "docs"})
    assert not stray, f"{installed.wheel.name} has top-level entries outside evo/: {stray[:20]}"
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == {"evo"}, f"{installed.wheel.name} installs top-level {sorted(tops)}, expected only evo"

    with zipfile.ZipFile(installed.wheel) as z:
        info = next(n for n in names if n.endswith(".dist-info/top_level.txt"))
        assert z.read(info).decode().split() == ["evo"]
        entry = z.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
        assert re.search(r"^evo\s*=\s*evo\.cli:entry\s*$", entry, re.MULTILINE), entry


def test_cli_runs_from_the_installed_package(installed: Installed) -> None:
    evo, cwd, env = installed.bin("evo"), installed.work, installed.env
    version = installed.wheel.name.split("-")[1]

    out = _run([evo, "--version"], "evo --version", cwd=cwd, env=env).stdout.strip()
    assert re.fullmatch(r"evo \d+\.\d+\.\d+\S*", out), out
    assert out == f"evo {version}", f"{out!r} != wheel version {version}"

    cfg = _run([evo, "run", "--cfg", "job"], "evo run --cfg job", cwd=cwd, env=env).stdout
    for key in ("shapes:", "search:", "islands:", "mutator:", "llm:", "evaluator:", "archive:"):
        assert re.search(rf"^{key}", cfg, re.MULTILINE), f"`evo run --cfg job` lacks {key!r}:\n{cfg}"

    help_ = _run([evo, "selftest", "--help"], "evo selftest --help", cwd=cwd, env=env).stdout
    assert help_.splitlines()[0].startswith("usage: evo selftest"), help_


_PROBE = textwrap.dedent("""
    import importlib, importlib.util, json, sys
    from importlib import resources
    mods = {name: importlib.import_module(name).__file__ for name in %(mods)r}
    tops = {name: importlib.util.find_spec(name) is not None for name in %(tops)r}
    evo_loaded = {n: getattr(m, "__file__", None) for n, m in list(sys.modules.items())
                  if n == "evo" or n.startswith("evo.")}

    from evo.families import FAMILIES
    hopper = FAMILIES["hopper"]
    source = hopper.candidate(hopper.default).source
    from evo.mutators.llm import load_templates
    templates = load_templates()
    from evo.evaluation.selftest import kernel_source
    good = kernel_source("good.cu")
    from evo.cli.hydra_app import CONF_DIR
    print(json.dumps({
        "modules": mods, "top_level_found": tops, "evo_loaded": evo_loaded, "sys_path": sys.path,
        "hopper_has_hgemm": "hgemm" in source, "hopper_len": len(source),
        "templates": sorted(t.name for t in templates),
        "good_has_hgemm": "hgemm" in good,
        "resources": {
            "conf": CONF_DIR,
            "families": str(resources.files("evo.families")),
            "prompts": str(resources.files("evo.mutators").joinpath("prompts")),
            "selftest_kernels": str(resources.files("evo.evaluation").joinpath("selftest_kernels")),
            "templates": str(resources.files("evo.templates")),
        },
        "report_templates": sorted(e.name for e in resources.files("evo.templates").iterdir()
                                   if e.name.endswith(".j2")),
    }))
""")


def test_imports_and_data_come_from_the_venv(installed: Installed) -> None:
    probe = _PROBE % {"mods": IMPORTED, "tops": TOP_LEVEL_NAMES}
    proc = _run([installed.bin("python"), "-c", probe], "importing evo from the venv",
                cwd=installed.work, env=installed.env)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    venv = installed.venv

    outside = {n: f for n, f in got["modules"].items() if not f or not _inside(f, venv)}
    assert not outside, f"modules not loaded from the venv {venv}: {outside}"
    outside = {n: f for n, f in got["evo_loaded"].items() if f and not _inside(f, venv)}
    assert not outside, f"evo modules loaded from outside the venv {venv}: {outside}"
    in_repo = [p for p in got["sys_path"] if p and _inside(p, REPO)]
    assert not in_repo, f"the repository is on the installed python's sys.path: {in_repo}"
    found = [n for n, f in got["top_level_found"].items() if f]
    assert not found, f"top-level modules {found} are importable; they must only exist as evo.<name>"

    outside = {n: p for n, p in got["resources"].items() if not _inside(p, venv)}
    assert not outside, f"package data resolved outside the venv {venv}: {outside}"
    assert got["hopper_has_hgemm"], "FAMILIES['hopper'] rendered a source without 'hgemm'"
    assert got["good_has_hgemm"], "selftest kernel good.cu has no 'hgemm'"
    j2 = sorted(p.name for p in (REPO / "evo" / "templates").glob("*.j2"))
    assert got["report_templates"] == j2, f"installed evo/templates has {got['report_templates']}, the repo {j2}"
    shipped = sorted(p.stem for p in (REPO / "mutators" / "prompts").glob("*.md") if not p.name.startswith("_"))
    assert got["templates"] == shipped, f"load_templates() gave {got['templates']}, the repo has {shipped}"


def test_simulated_search_runs_from_the_installed_package(installed: Installed, tmp_path: Path) -> None:
    if _nvcc() is None:
        pytest.skip("nvcc not found (PATH, /usr/local/cuda/bin): the simulated evaluator compiles real kernels")
    env = dict(installed.env)
    env.setdefault("EVO_CACHE_DIR", str(tmp_path / "nvcc-cache"))
    db = tmp_path / "r.sqlite"
    _run([installed.bin("evo"), "run", "evaluator=simulated", "llm=none", "search.max_evaluations=6",
          "islands.n=1", "islands.population=2", "search.children_per_island=2", "shapes=inline",
          "shapes.list=[64x64x64]", f"archive.path={db}", "search.progress=false"],
         "evo run evaluator=simulated (installed)", cwd=installed.work, env=env)
    assert db.exists(), f"no archive at {db}"
    log = tmp_path / "r.run1.log"
    assert log.exists(), f"no run log at {log}: {sorted(p.name for p in tmp_path.iterdir())}"
    with sqlite3.connect(db) as c:
        evaluations = c.execute("SELECT count(*) FROM evaluations").fetchone()[0]
        compiles = c.execute("SELECT count(*) FROM compiles").fetchone()[0]
    assert evaluations > 0 and compiles > 0, f"{db} records {evaluations} evaluations, {compiles} compiles"
