"""What the command line says when there is little to show: an export not yet verified. Simulated evaluator."""
from __future__ import annotations

import pytest

from evo.cli.hydra_app import compose
from evo.search import run_search
from evo.search.bench import run_bench
from tests.cli_helpers import evo_cli

SMALL = ["evaluator=simulated", "llm=none", "shapes=inline", "shapes.list=[64x64x64]", "search.max_evaluations=6",
         "islands.n=1", "islands.population=2", "search.children_per_island=2", "search.progress=false"]


@pytest.fixture(scope="module")
def search_then_bench(tmp_path_factory):
    """An archive whose last run (2) is a bench, after a search (1) that filled its one cell."""
    path = tmp_path_factory.mktemp("hints") / "a.sqlite"
    run_search(*compose(SMALL + [f"archive.path={path}"]))
    run_bench(*compose(SMALL + [f"archive.path={path}"]))
    return path


def test_an_export_without_verify_says_the_dispatch_skips_it(search_then_bench, tmp_path, capsys):
    out = tmp_path / "exp"
    code, stdout, _ = evo_cli(capsys, "-q", "export", str(search_then_bench), "--run", "1", "--no-cubins",
                              "--out", str(out))
    assert code == 0
    assert stdout.strip() == (f"not verified: evo.dispatch skips unverified kernels (torch runs every call); on the "
                              f"GPU machine that will run them: evo export {search_then_bench} --run 1 --out {out} "
                              f"--verify")
