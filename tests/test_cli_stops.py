"""How a recorded command ends early: Ctrl-C under -q still names the archive to resume, and a run
whose output reader goes away (`evo run ... 2>&1 | head`) stops as on Ctrl-C, resumable."""
from __future__ import annotations

import signal
import subprocess
import sys

import evo.search
import evo.search.sweep
from evo.archive import Archive
from evo.search import resume
from tests.cli_helpers import evo_cli


def _interrupt(*args, **kwargs):
    raise KeyboardInterrupt


def test_ctrl_c_under_quiet_still_says_how_to_resume(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(evo.search, "run_search", _interrupt)
    monkeypatch.setattr(evo.search, "resume", _interrupt)
    monkeypatch.setattr(evo.search.sweep, "run_sweep", _interrupt)
    path = tmp_path / "a.sqlite"
    code, _, err = evo_cli(capsys, "-q", "run", "evaluator=simulated", f"archive.path={path}")
    assert code == 130 and err.strip() == f"evo: interrupted: run stopped; continue it with `evo resume {path}`"
    code, _, err = evo_cli(capsys, "-q", "resume", str(path), "--run", "2")
    assert code == 130 and err.strip() == f"evo: interrupted: run stopped; continue it with `evo resume {path} --run 2`"
    code, _, err = evo_cli(capsys, "-q", "sweep", "evaluator=simulated", f"archive.path={path}")
    assert code == 130 and err.strip() == f"evo: interrupted: {path} holds everything finished so far"


def test_a_stopped_search_gives_one_resume_command_in_its_log_and_its_last_line(tmp_path, monkeypatch, capsys):
    """The run's log and the command's last line used to name two commands (with and without --run)."""
    import evo.search.session
    monkeypatch.setattr(evo.search.session.Evaluator, "start", _interrupt)
    path = tmp_path / "a.sqlite"
    code, _, err = evo_cli(capsys, "-q", "run", "evaluator=simulated", f"archive.path={path}")
    again = f"`evo resume {path} --run 1`"
    assert code == 130 and err.strip().splitlines()[-1] == f"evo: interrupted: run stopped; continue it with {again}"
    assert f"search run 1 stopped (Ctrl-C): continue it with {again}" in err


def _run_until_generation_1(path, max_evaluations: int) -> subprocess.Popen:
    """A simulated `evo run ... 2>&1 | ...` as a process of its own, its output read up to generation 1."""
    proc = subprocess.Popen([sys.executable, "-m", "evo", "run", "evaluator=simulated", "llm=none", "shapes=inline",
                             "shapes.list=[64x64x64]", "islands.n=1", "islands.population=2",
                             "search.children_per_island=2", f"search.max_evaluations={max_evaluations}",
                             f"archive.path={path}"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if "gen   1 |" in line:
            break
    return proc


def test_a_run_whose_reader_goes_away_is_stopped_and_resumes(tmp_path):
    path = tmp_path / "p.sqlite"
    proc = _run_until_generation_1(path, 40)
    proc.stdout.close()  # `2>&1 | head`: read a little, then go away
    assert proc.wait(timeout=120) == 130
    run = Archive.open(path, readonly=True).runs()[0]
    assert run["status"] == "stopped" and run["evaluations"] < 40
    assert resume(str(path)).reason.startswith("evaluation budget reached")
    assert Archive.open(path, readonly=True).runs()[0]["status"] == "finished"


def test_resume_takes_its_options_after_the_archive_too(tmp_path, capsys):
    """`evo resume ARCHIVE --run 1 search.max_evaluations=N` (as a newcomer wrote it) was refused with
    'unrecognized arguments'; argparse reads the options and overrides intermixed now."""
    from evo.cli.commands import resume_cli
    from evo.core.errors import EvoError
    try:
        resume_cli([str(tmp_path / "none.sqlite"), "--run", "1", "search.max_evaluations=5"])
    except SystemExit:  # argparse's refusal
        raise AssertionError(capsys.readouterr().err) from None
    except EvoError as e:  # parsed: the archive is what is missing
        assert "no archive at" in str(e)
    else:
        raise AssertionError("resuming a missing archive did not fail")


def test_a_run_ended_by_kill_is_stopped_resumable_and_exits_143(tmp_path):
    """`kill PID` (or `timeout`) stops a run as Ctrl-C does, and the exit status says which signal
    ended it, as a shell reports it: 128 + 15 (it said 130, Ctrl-C's)."""
    path = tmp_path / "k.sqlite"
    proc = _run_until_generation_1(path, 100000)
    proc.send_signal(signal.SIGTERM)
    rest = proc.stdout.read()
    assert proc.wait(timeout=120) == 143, rest
    assert "evo: interrupted: run stopped; continue it with `evo resume" in rest
    assert Archive.open(path, readonly=True).runs()[0]["status"] == "stopped"
