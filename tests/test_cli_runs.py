"""The command line as a user runs it: the per-run log file (worker messages included), quiet and
verbose, and Hydra multirun with one archive per job. Simulated evaluator, real nvcc."""
from __future__ import annotations

import subprocess
import sys

from evo.archive import Archive
from evo.core.records import Status

SMALL = ["evaluator=simulated", "llm=none", "search.max_evaluations=6", "islands.n=1", "islands.population=2",
         "search.children_per_island=2", "shapes=inline", "shapes.list=[64x64x64]", "evaluator.timeout_s=20"]


def evo(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "evo", *args], capture_output=True, text=True, timeout=300,
                          cwd=cwd)


def test_a_run_writes_its_log_beside_the_archive_with_worker_messages(tmp_path):
    out = evo("run", *SMALL, f"archive.path={tmp_path / 'a.sqlite'}")
    assert out.returncode == 0, out.stderr[-2000:]
    log = (tmp_path / "a.run1.log").read_text()
    assert "[GPU sim0] worker ready on SIMULATED H200" in log  # from the worker process
    assert "gen   0 |" in log and "evaluation budget reached" in log
    assert "MODELLED by the CPU test double" in log
    assert "gen   0 |" in out.stderr  # the terminal shows the same by default
    # the progress line counts failed evaluations (by status) apart from operator uses without a new child
    statuses = {str(s) for s in Status}
    lines = [line for line in log.splitlines() if "| failed: " in line]
    assert lines and all("| no new child from the operator: " in line for line in lines)
    for line in lines:
        failed = line.split("| failed: ")[1].split(" | ")[0]
        assert failed == "none" or all(part.rsplit(" ", 1)[0] in statuses for part in failed.split(", ")), line


def test_quiet_hides_progress_but_the_log_file_keeps_everything(tmp_path):
    out = evo("-q", "run", *SMALL, f"archive.path={tmp_path / 'q.sqlite'}")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "gen   0 |" not in out.stderr and "warning: evaluator=simulated" in out.stderr
    assert "budget reached" in out.stdout and "budget reached" not in out.stderr  # results: stdout
    assert "gen   0 |" in (tmp_path / "q.run1.log").read_text()


def test_quiet_sweep_still_prints_its_summary_table(tmp_path):
    out = evo("-q", "sweep", "evaluator=simulated", "shapes=inline", "shapes.list=[64x64x64]", "sweep.budget=2",
              "sweep.sample=shortlist", f"archive.path={tmp_path / 's.sqlite'}")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "geomean vs best lib" in out.stdout and "sweep [" not in out.stderr
    # the ratio is a best of several kernel timings against one library timing: said beside the table
    assert "fastest of up to 2 kernel timings" in out.stdout
    assert f"kernels_of={tmp_path / 's.sqlite'} evaluator=simulated" in out.stdout  # as it was swept
    # the libraries timed again after the kernels (Evaluator.library_drift): the test double has no launch modes
    assert "SIMULATED" in out.stdout and "the libraries, timed again alone after the kernels on the 1 smallest" in out.stdout
    assert "read 1.000x their stored times" in out.stdout and "no change of launch mode" in out.stdout
    archive = Archive.open(tmp_path / "s.sqlite", readonly=True)
    try:
        assert archive.get_state(1, "library_drift")["shapes"] == ["64x64x64"]
    finally:
        archive.close()
    one = evo("-q", "sweep", "evaluator=simulated", "shapes=inline", "shapes.list=[64x64x64]", "sweep.budget=1",
              "sweep.sample=shortlist", f"archive.path={tmp_path / 'one.sqlite'}")
    assert one.returncode == 0 and "geomean vs best lib" in one.stdout and "kernel timings against" not in one.stdout


def test_verbose_shows_debug_messages_from_the_workers(tmp_path):
    out = evo("run", "-v", *SMALL, f"archive.path={tmp_path / 'v.sqlite'}")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "[GPU sim0] request" in out.stderr


def test_multirun_gives_one_archive_per_job_and_a_summary(tmp_path):
    out = evo("run", "-m", "islands.tournament=1,2", *SMALL, "archive.path=runs.sqlite",
              f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    for job in (0, 1):
        path = tmp_path / "sweep" / str(job) / "runs.sqlite"
        runs = Archive.open(path, create=False).runs()
        assert [r["status"] for r in runs] == ["finished"]
        assert (tmp_path / "sweep" / str(job) / "runs.run1.log").is_file()
    assert not (tmp_path / "runs.sqlite").exists()  # nothing written where the jobs would collide
    assert "SIMULATED (CPU test double: modelled times, not measurements): 2 jobs:" in out.stdout
    assert "islands.tournament=1" in out.stdout and "islands.tournament=2" in out.stdout


def test_multirun_checks_every_job_before_running_any(tmp_path):
    out = evo("run", "-m", "islands.tournament=1,-5", *SMALL, f"hydra.sweep.dir={tmp_path / 'sweep'}", cwd=tmp_path)
    assert out.returncode == 2, out.stderr[-1000:]
    assert out.stderr.strip().splitlines()[-1] == "evo: error: islands.tournament=-5: must be >= 1"
    assert not (tmp_path / "sweep").exists()


def test_cfg_job_rejects_a_bad_override_in_one_line(tmp_path):
    out = evo("run", "--cfg", "job", "shapes=nope", cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.startswith("evo: error: Could not find 'shapes/nope'")
    assert "base_shapes" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_piping_into_head_ends_quietly(tmp_path):
    cmd = f"{sys.executable} -m evo run --help | head -1"
    out = subprocess.run(cmd, shell=True, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.stdout.startswith("usage: evo run") and "Traceback" not in out.stderr


def test_a_shape_that_cannot_fit_the_gpu_is_refused_before_any_evaluation(tmp_path):
    args = [a for a in SMALL if not a.startswith("shapes.list")]
    out = evo("run", *args, "shapes.list=[64x64x64,300000x300000x300000]", f"archive.path={tmp_path / 'm.sqlite'}")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines()[-1].startswith("evo: error: 1 shape(s) cannot fit the GPU's")
    runs = Archive.open(tmp_path / "m.sqlite", readonly=True).runs()
    assert [(r["status"], r["evaluations"]) for r in runs] == [("failed", 0)]


def test_multirun_range_and_choice_sweeps_are_expanded_and_checked(tmp_path):
    from evo.cli.hydra_app import sweep_jobs
    jobs = sweep_jobs(["islands.n=range(1,3)", "islands.tournament=choice(1,2)", "search.seed=interval(0,1)"])
    assert ["islands.n=2", "islands.tournament=1"] in jobs and ["islands.n=1", "islands.tournament=2"] in jobs
    out = evo("run", "-m", "islands.tournament=range(-1,2)", *SMALL, f"hydra.sweep.dir={tmp_path / 's'}", cwd=tmp_path)
    assert out.returncode == 2 and "islands.tournament=-1: must be >= 1" in out.stderr


def test_hot_mode_is_refused_as_the_fitness():
    out = evo("run", "evaluator.mode=hot", "--cfg", "job")
    assert out.returncode == 2 and "evaluator.modes=[rotating,hot]" in out.stderr


def test_bench_times_an_archives_per_shape_bests_each_on_its_own_shape(tmp_path):
    """`evo bench kernels_of=ARCHIVE`: the sweep's winners, each timed on its shape beside the libraries,
    with their rate, roofline fraction, the SM clock and the ratio to the best library (here modelled)."""
    sweep = evo("-q", "sweep", "evaluator=simulated", "shapes=inline", "shapes.list=[64x64x64,257x2048x1024]",
                "sweep.budget=3", "sweep.sample=shortlist", f"archive.path={tmp_path / 's.sqlite'}")
    assert sweep.returncode == 0, sweep.stderr[-2000:]
    import gzip
    import shutil
    with open(tmp_path / "s.sqlite", "rb") as src, gzip.open(tmp_path / "s.sqlite.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)  # benchmarks/ keeps archives gzipped: read as they are
    out = evo("-q", "bench", f"kernels_of={tmp_path / 's.sqlite.gz'}", "evaluator=simulated",
              f"archive.path={tmp_path / 'b.sqlite'}")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "elite_us" in out.stdout and "MHz" in out.stdout and "4096" not in out.stdout  # the archive's shapes
    assert "geomean best library time / elite time" in out.stdout and "over 2 rows" in out.stdout
    a = Archive.open(tmp_path / "b.sqlite", create=False, readonly=True)
    rows = a.get_state(a.last_run()["id"], "bench_rows")
    a.close()
    assert sorted((r["M"], r["N"]) for r in rows) == [(64, 64), (257, 2048)]
    assert all(r["kernel_elite_ms"] and r["elite_kernel"] for r in rows)
    missing = evo("-q", "bench", f"kernels_of={tmp_path / 'none.sqlite'}", "evaluator=simulated")
    assert missing.returncode != 0 and "is not a file" in missing.stderr
    # shapes given inline: only those of the archive's shapes (a shape it lacks is refused, not ignored)
    some = evo("-q", "bench", f"kernels_of={tmp_path / 's.sqlite.gz'}", "evaluator=simulated", "shapes=inline",
               "shapes.list=[257x2048x1024]", f"archive.path={tmp_path / 'b2.sqlite'}")
    assert some.returncode == 0, some.stderr[-2000:]
    assert "257" in some.stdout and "over 1 rows" in some.stdout
    lacking = evo("-q", "bench", f"kernels_of={tmp_path / 's.sqlite.gz'}", "evaluator=simulated", "shapes=inline",
                  "shapes.list=[64x64x64,4096x4096x4096]", f"archive.path={tmp_path / 'b3.sqlite'}")
    assert lacking.returncode != 0 and "has no kernel for 4096x4096x4096" in lacking.stderr, lacking.stderr[-2000:]
    # a self-test recorded after the sweep (the default archive of both): still the sweep's bests
    from evo.search.retime import bests
    a = Archive.open(tmp_path / "s.sqlite")
    a.start_run(kind="selftest", config={}, seed=0, backend="simulated")
    a.close()
    assert sorted((s.M, s.N) for s in bests(tmp_path / "s.sqlite")) == [(64, 64), (257, 2048)]


def test_export_names_the_run_to_take_when_the_last_one_has_no_kernel(tmp_path):
    """A bench recorded into a sweep's archive becomes its last run: export says which run has kernels."""
    path = tmp_path / "s.sqlite"
    assert evo("-q", "sweep", "evaluator=simulated", "shapes=inline", "shapes.list=[64x64x64]", "sweep.budget=2",
               "sweep.sample=shortlist", f"archive.path={path}").returncode == 0
    assert evo("-q", "bench", "evaluator=simulated", "shapes=inline", "shapes.list=[64x64x64]",
               f"archive.path={path}").returncode == 0
    out = evo("export", str(path), "--no-cubins", "--out", str(tmp_path / "exported"))
    assert out.returncode != 0 and "run 2 (bench)" in out.stderr and "--run 1" in out.stderr, out.stderr
