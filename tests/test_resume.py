"""Resume under careless use (issue 12): a run has one owner at a time, checked with real processes;
changed settings either work (budgets, islands) or are refused before anything is written."""
import hashlib
import json
import logging
import os
import signal
import subprocess
import sys
import time

import pytest

from evo.archive import Archive
from evo.archive.ownership import OWNER_KEY, RunHeld, RunTakenOver, held_by
from evo.cli.hydra_app import compose
from evo.core.errors import ConfigError
from evo.search import resume, run_search
from evo.search.loop import Search

BASE = ["evaluator=simulated", "shapes=inline", "shapes.list=[64x64x64,77x4096x4096,1024x1024x1024]",
        "islands.n=2", "islands.population=4", "search.children_per_island=4", "search.seed=7", "llm=none",
        "search.progress=false", "islands.migration_interval=2", "search.transfer_every=2", "evaluator.timeout_s=10"]


def finished_run(tmp_path, name="a.sqlite", budget=12, *extra):
    path = tmp_path / name
    run_search(*compose(BASE + [f"archive.path={path}", f"search.max_evaluations={budget}", *extra]))
    return path


#: `python -m evo`, but a search holds its run at least 1.5 s before it starts working, so that two
#: processes started together really overlap however fast the machine (the test double is quick)
SLOW_START = ("import sys, time; from evo.search.loop import Search; run = Search.run; "
              "Search.run = lambda self: (time.sleep(1.5), run(self))[1]; from evo.cli import main; main(sys.argv[1:])")


def evo(*args, slow_start: bool = False) -> subprocess.Popen:
    cmd = [sys.executable, "-c", SLOW_START] if slow_start else [sys.executable, "-m", "evo"]
    return subprocess.Popen([*cmd, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def wait_for_evaluations(path, n: int, proc: subprocess.Popen, timeout: float = 60) -> int:
    """Poll the archive read-only (what a browsing command sees of a running search) until n rows."""
    deadline, seen = time.monotonic() + timeout, 0
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            a = Archive.open(path, readonly=True)
            seen = a.count("evaluations")
            a.close()
        except Exception:  # not created yet
            seen = 0
        if seen >= n:
            return seen
        time.sleep(0.05)
    raise AssertionError(f"{seen} evaluations after {timeout} s (exit {proc.poll()}): {proc.stderr.read()[-2000:]}"
                         if proc.poll() is not None else f"{seen} evaluations after {timeout} s")


def state(path) -> dict:
    a = Archive.open(path, readonly=True)
    run = a.run(1)
    out = {"status": run["status"], "config": json.loads(run["config_json"]), "owner": held_by(a, 1),
           "evaluations": a.count("evaluations"), "spent": (a.get_state(1, "search") or {}).get("spent", 0),
           "islands": [len(json.loads(r["population_json"])["members"]) for r in
                       a.db.query("select population_json from island_state where run_id = 1 order by island")]}
    a.close()
    return out


# ---- one owner per run ----------------------------------------------------------------------
def test_a_running_run_refuses_a_second_process_and_a_killed_one_is_taken_over(tmp_path):
    path = tmp_path / "live.sqlite"
    run = evo("run", *BASE, "search.max_evaluations=100000", f"archive.path={path}")
    try:
        wait_for_evaluations(path, 6, run)
        second = subprocess.run([sys.executable, "-m", "evo", "resume", str(path)], capture_output=True, text=True,
                                timeout=60)
        assert second.returncode == 2, second.stderr
        assert second.stderr.strip() == second.stderr.strip().splitlines()[0]  # one line
        assert f"is being run by pid {run.pid} on " in second.stderr and f"kill {run.pid}" in second.stderr
        assert run.poll() is None  # the owner carries on
        os.killpg(run.pid, signal.SIGKILL)  # the search and its workers, at once: the claim stays behind
        run.wait()
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    assert state(path)["owner"].pid == run.pid
    out = subprocess.run([sys.executable, "-m", "evo", "resume", str(path), "search.max_evaluations=16"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"taking over the stale claim of pid {run.pid}" in out.stderr and "that process is gone" in out.stderr
    after = state(path)
    assert after["status"] == "finished" and after["owner"] is None and after["spent"] >= 16
    log = (tmp_path / "live.run1.log").read_text()
    assert "taking over the stale claim" in log  # said in the run's log too


def test_two_resumes_at_once_exactly_one_proceeds(tmp_path):
    path = finished_run(tmp_path, budget=8)
    procs = [evo("resume", str(path), "search.max_evaluations=36", slow_start=True) for _ in range(2)]
    results = []
    for p in procs:
        _, err = p.communicate(timeout=120)
        results.append((p.returncode, err))
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], results
    refused = next(err for code, err in results if code == 2)
    assert "evo: error: run 1 of" in refused and "is being run by pid" in refused and "Traceback" not in refused
    after = state(path)
    assert after["status"] == "finished" and after["owner"] is None
    assert 36 <= after["spent"] <= 40 and after["evaluations"] <= 40  # one budget, spent once


def test_a_claim_from_another_machine_needs_take_over(tmp_path, caplog):
    path = finished_run(tmp_path, budget=8)
    a = Archive.open(path)
    a.put_state(1, OWNER_KEY, {"host": "gpu-box-7", "pid": 4242, "started": "1", "boot": "b", "pidns": "n",
                               "token": "t", "since": "2026-01-01T00:00:00+00:00"})
    a.set_run_status(1, "running")
    a.close()
    with pytest.raises(RunHeld, match=r"held by pid 4242 on gpu-box-7 .*cannot be checked from here.*--take-over"):
        resume(str(path), overrides=["search.max_evaluations=16"])
    assert state(path)["config"]["search"]["max_evaluations"] == 8 and state(path)["status"] == "running"
    with caplog.at_level(logging.WARNING, logger="evo"):
        resume(str(path), overrides=["search.max_evaluations=16"], take_over=True)
    assert "taking over the stale claim of pid 4242 on gpu-box-7" in caplog.text and "--take-over given" in caplog.text
    after = state(path)
    assert after["status"] == "finished" and after["owner"] is None and after["spent"] >= 16


def test_a_session_whose_run_was_taken_over_stops_without_saving(tmp_path, monkeypatch):
    path = finished_run(tmp_path, budget=8)
    original, saves = Search.save, []

    def save(self):
        original(self)
        saves.append(self.state.generation)
        if len(saves) == 1:  # another process takes the run over behind this one's back
            self.archive.put_state(self.run_id, OWNER_KEY, {"host": "elsewhere", "pid": 1, "token": "theirs"})
            self.archive.set_run_status(self.run_id, "running")

    monkeypatch.setattr(Search, "save", save)
    with pytest.raises(RunTakenOver, match="was taken over by pid 1 on elsewhere"):
        resume(str(path), overrides=["search.max_evaluations=40"])
    after = state(path)
    assert len(saves) == 1 and after["status"] == "running" and after["owner"].token == "theirs"
    assert after["spent"] < 40  # the second generation's state was not saved


# ---- changed settings ----------------------------------------------------------------------------
def test_islands_can_be_added_and_removed_on_resume(tmp_path, caplog):
    path = finished_run(tmp_path, budget=10)
    assert state(path)["islands"] == [4, 4]
    with caplog.at_level(logging.WARNING, logger="evo"):
        resume(str(path), overrides=["islands.n=4", "search.max_evaluations=16"])
    assert "2 island(s) added, filled with the best kernels measured on their shapes" in caplog.text
    after = state(path)
    assert after["status"] == "finished" and after["config"]["islands"]["n"] == 4
    assert len(after["islands"]) == 4 and all(n > 0 for n in after["islands"])
    resume(str(path), overrides=["islands.n=1", "islands.population=6", "search.max_evaluations=20"])
    after = state(path)
    assert after["status"] == "finished" and after["config"]["islands"]["n"] == 1 and after["islands"] == [6]
    assert after["spent"] >= 20
    resume(str(path), overrides=["search.max_evaluations=22", "llm=none", "evaluator.timeout_s=20"])  # still resumable
    assert state(path)["config"]["evaluator"]["timeout_s"] == 20


@pytest.mark.parametrize("override, message", [
    ("shapes=llm_layers", r"cannot resume with shapes=llm_layers: it changes shapes\.list \(the shapes are"),
    ("shapes.list=[64x64x64]", r"cannot resume with shapes\.list=\[64x64x64\]: it changes shapes\.list"),
    ("search.seed=8", r"search\.seed=8: it changes search\.seed \(the seed made every decision"),
    ("evaluator=gpu", r"evaluator=gpu: it changes evaluator\.backend"),
    ("evaluator.mode=hot", r"evaluator\.mode"),
    ("evaluator.pdl=true", r"evaluator\.pdl=true: it changes evaluator\.pdl \(the cells compare kernels launched"),
    ("islands.specialize=none", r"it changes islands\.specialize"),
    ("archive.path=elsewhere.sqlite", r"it changes archive\.path .*evo resume PATH"),
    ("+experiment=quick", r"\+experiment=quick: a resume takes key=value overrides"),
    ("islands.n=0", r"islands\.n=0: must be >= 1"),
    ("islands.n=many", r"islands\.n=many: Value 'many'"),
    ("search.budget=5", r"search\.budget=5: Key 'budget' not in 'SearchConfig'"),
    ("llm=nope", r"llm=nope: no such option \(available: anthropic, default, none, replay\)"),
])
def test_a_change_that_would_change_the_archives_meaning_is_refused_before_anything_is_written(
        override, message, refusable):
    path, before = refusable
    with pytest.raises(ConfigError, match=message):
        resume(str(path), overrides=["search.max_evaluations=20", override])
    assert {**state(path), "digest": digest(path)} == before and digest(path) == before["digest"]
    assert {p.name for p in path.parent.iterdir()} <= {"r.run1.log", "r.sqlite", "r.sqlite-wal", "r.sqlite-shm"}


@pytest.fixture(scope="module")
def refusable(tmp_path_factory):
    path = finished_run(tmp_path_factory.mktemp("refuse"), "r.sqlite", 8)
    return path, {**state(path), "digest": digest(path)}


def digest(path) -> str:
    """The archive's content, row by row (a refused open may still switch the file's journal mode, which
    rewrites header bytes: what the archive holds is what must not change)."""
    a = Archive.open(path, readonly=True)
    try:
        return hashlib.sha256("\n".join(a.db.conn.iterdump()).encode()).hexdigest()
    finally:
        a.close()


def test_a_resume_that_fails_after_starting_leaves_the_run_resumable(tmp_path, monkeypatch):
    path = finished_run(tmp_path, budget=8)

    def broken(self):
        raise RuntimeError("a bug while loading (test)")

    monkeypatch.setattr(Search, "load", broken)
    with pytest.raises(RuntimeError, match="a bug while loading"):
        resume(str(path), overrides=["islands.n=3", "search.max_evaluations=16"])
    after = state(path)
    assert after["status"] == "failed" and after["owner"] is None
    assert after["config"]["islands"]["n"] == 2 and after["config"]["search"]["max_evaluations"] == 8  # not stored
    monkeypatch.undo()
    resume(str(path), overrides=["islands.n=3", "search.max_evaluations=16"])
    after = state(path)
    assert after["status"] == "finished" and after["config"]["islands"]["n"] == 3 and len(after["islands"]) == 3


def test_a_run_stored_before_a_setting_existed_resumes_with_the_behaviour_it_started_with():
    from evo.config import as_dict
    from evo.search import resumed_config
    c, _ = compose(["evaluator=simulated"])
    stored = as_dict(c)
    for group, key in (("search", "cost_prior"), ("mutator", "reward_against"), ("mutator", "evaluation_cost"),
                       ("evaluator", "pdl")):
        del stored[group][key]  # as an older evo stored its runs
    old = resumed_config(stored, [])
    assert (old.search.cost_prior, old.mutator.reward_against, old.mutator.evaluation_cost, old.evaluator.pdl) == (
        "off", "parent", 0.0, False)
    stored = as_dict(c)
    stored["evaluator"]["pdl"] = True  # as runs stored it while it was the default (sessions 18-30)
    new = resumed_config(stored, [])  # a run that stored them keeps what it stored
    assert (new.search.cost_prior, new.mutator.reward_against, new.evaluator.pdl) == ("auto", "best", True)
    assert resumed_config(as_dict(c), []).evaluator.pdl is False  # and one stored since, its false


def test_a_plain_resume_names_an_unfinished_run_beside_the_finished_last_one(tmp_path):
    """A killed run 1 beside a finished run 2: `evo resume ARCHIVE` spoke of run 2 only."""
    from evo.core.errors import EvoError
    path = finished_run(tmp_path)
    a = Archive.open(path)
    a.set_run_status(1, "running")  # as a kill -9 leaves it
    a.close()
    finished_run(tmp_path)
    with pytest.raises(EvoError, match=rf"run 2 of .* finished; .*run 1 did not finish: continue it with "
                                       rf"`evo resume {path} --run 1`"):
        resume(str(path))


def test_a_new_run_beside_a_live_one_says_so(tmp_path, caplog):
    import dataclasses

    from evo.archive.ownership import Owner
    path = finished_run(tmp_path)
    a = Archive.open(path)
    a.set_run_status(1, "running")
    a.put_state(1, OWNER_KEY, dataclasses.asdict(Owner.current()))  # a live process (this one) holds run 1
    a.close()
    with caplog.at_level(logging.WARNING):
        finished_run(tmp_path)
    assert any(f"also holds run 1 (pid {os.getpid()}" in r.getMessage() for r in caplog.records)


def test_a_stopped_run_says_so_in_its_log(tmp_path, monkeypatch):
    path = tmp_path / "s.sqlite"
    monkeypatch.setattr(Search, "save", lambda self: (_ for _ in ()).throw(KeyboardInterrupt()))
    with pytest.raises(KeyboardInterrupt):
        run_search(*compose(BASE + [f"archive.path={path}", "search.max_evaluations=12"]))
    log = (tmp_path / "s.run1.log").read_text()
    assert f"search run 1 stopped (Ctrl-C): continue it with `evo resume {path} --run 1`" in log
