"""What the command line says when there is little to show: an export not yet verified, a run
without kernels (a bench after a search), no failures, no LLM calls. Simulated evaluator."""
from __future__ import annotations

import warnings

import pytest

from evo.cli.hydra_app import compose
from evo.core.errors import EvoError
from evo.export import export
from evo.search import run_search
from evo.search.bench import run_bench
from evo.search.sweep import run_sweep
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
    assert stdout.strip() == (f"SIMULATED (CPU test double: modelled times, not measurements): "
                              f"not verified: evo.dispatch skips unverified kernels (torch runs every call); on the "
                              f"GPU machine that will run them: evo export {search_then_bench} --run 1 --out {out} "
                              f"--verify")


def test_elites_of_a_bench_name_the_run_and_the_run_that_has_kernels(search_then_bench, capsys):
    code, stdout, _ = evo_cli(capsys, "archive", "elites", str(search_then_bench))
    assert code == 0
    assert stdout.strip() == (f"no kernels in run 2 (bench) of {search_then_bench}: a bench fills no cells; "
                              f"run 1 (search) has 1: evo archive elites {search_then_bench} --run 1")
    with pytest.raises(EvoError, match=r"nothing to export: no kernels in run 2 \(bench\) .* --run 1$"):
        export(str(search_then_bench), str(search_then_bench.parent / "none"), with_cubins=False)


def test_a_run_without_kernels_names_every_run_that_has_some(tmp_path, capsys):
    """A search, a sweep and a bench into one archive (as `evo run`, `evo sweep`, `evo bench` all default
    to the same file): the bench's empty answer points at the sweep and names the search too."""
    path = tmp_path / "three.sqlite"
    run_search(*compose(SMALL + [f"archive.path={path}"]))
    run_sweep(*compose(SMALL + ["sweep.budget=2", "sweep.sample=shortlist", f"archive.path={path}"]))
    run_bench(*compose(SMALL + [f"archive.path={path}"]))
    code, stdout, _ = evo_cli(capsys, "archive", "elites", str(path))
    assert code == 0
    assert stdout.strip() == (f"no kernels in run 3 (bench) of {path}: a bench fills no cells; run 2 (sweep) has 1: "
                              f"evo archive elites {path} --run 2 (also run 1 (search) with 1)")


def test_empty_failures_and_llm_tables_say_what_is_empty_and_why(search_then_bench, capsys):
    _, stdout, _ = evo_cli(capsys, "archive", "failures", str(search_then_bench))
    assert stdout.strip() == "no failed evaluations in run 2 (bench)"
    _, stdout, _ = evo_cli(capsys, "archive", "llm", str(search_then_bench))
    assert stdout.strip() == "no LLM calls in run 2 (bench): only searches call the LLM"
    _, stdout, _ = evo_cli(capsys, "archive", "llm", str(search_then_bench), "--run", "1")
    assert stdout.strip() == "no LLM calls in run 1 (search): it ran with llm=none"


def test_a_report_of_a_run_without_kernels_warns_and_leaks_no_library_warning(search_then_bench, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, stdout, stderr = evo_cli(capsys, "-q", "report", str(search_then_bench), "--out", str(tmp_path / "r"))
    assert code == 0 and [str(w.message) for w in caught] == []
    assert stderr.strip() == (f"warning: the report shows no speedups: no kernels in run 2 (bench) of "
                              f"{search_then_bench}: a bench fills no cells; run 1 (search) has 1: evo report "
                              f"{search_then_bench} --run 1")
    assert stdout.strip() == (f"SIMULATED (CPU test double: modelled times, not measurements): report of run 2 "
                              f"(bench): {tmp_path / 'r' / 'report.html'} (+ 5 PNGs)")
