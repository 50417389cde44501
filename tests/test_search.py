"""The search with the CPU test double: budgets, ablations, and resume after a crash or kill -9."""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from evo.archive import Archive
from evo.cli.hydra_app import compose
from evo.core.shapes import Shape
from evo.islands import Individual, Island, migrate
from evo.mutators.policy import OperatorPolicy
from evo.search import resume, run_search

BASE = ["evaluator=simulated", "shapes=inline", "shapes.list=[64x64x64,77x4096x4096,1024x1024x1024]",
        "search.max_evaluations=40", "islands.n=2", "islands.population=4", "search.children_per_island=4",
        "search.seed=7", "llm=none", "search.progress=false", "islands.migration_interval=2",
        "search.transfer_every=2", "evaluator.timeout_s=10"]


def config(tmp_path, name, *extra):
    return compose(BASE + [f"archive.path={tmp_path / name}", *extra])


def fingerprint(path):
    a = Archive.open(path)
    run = a.last_run("search")["id"]
    evals = sorted((r["generation"], r["kernel_id"], r["M"], r["N"], r["K"], r["status"]) for r in a.db.query(
        "select generation, kernel_id, M, N, K, status from evaluations where run_id = ?", [run]))
    islands = [json.loads(r["population_json"])["members"] for r in
               a.db.query("select * from island_state where run_id = ? order by island", [run])]
    elites = sorted((r["cell"], r["kernel_id"]) for r in a.db.query("select * from elites where run_id = ?", [run]))
    return {"evaluations": evals, "islands": islands, "elites": elites, "policy": a.get_state(run, "policy"),
            "search": a.get_state(run, "search")["spent"], "status": a.run(run)["status"]}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("search")
    c, raw = config(tmp, "a.sqlite")
    run_search(c, raw)
    return fingerprint(tmp / "a.sqlite")


def test_search_respects_the_budget_and_fills_every_cell(uninterrupted):
    assert uninterrupted["status"] == "finished"
    assert 40 <= uninterrupted["search"] <= 44
    assert len(uninterrupted["elites"]) == 3
    assert len(uninterrupted["islands"]) == 2 and all(len(m) == 4 for m in uninterrupted["islands"])
    assert uninterrupted["policy"]["uses"]


def test_the_last_generation_stops_at_the_budget(tmp_path):
    """4 islands and 11 evaluations: the last generation has fewer children than islands. Equal budgets
    (evo compare) need the search to stop at the budget, not up to islands - 1 past it."""
    c, raw = config(tmp_path, "b.sqlite", "islands.n=4", "search.max_evaluations=11")
    run_search(c, raw)
    assert fingerprint(tmp_path / "b.sqlite")["search"] == 11


def crash_after(monkeypatch, n: int) -> None:
    """Ctrl-C in the middle of a generation, once `n` evaluations have been taken in by the search."""
    from evo.evaluation.evaluator import Evaluator
    original = Evaluator.evaluate
    seen = 0

    def evaluate(self, pairs, **kw):
        nonlocal seen
        for e in original(self, pairs, **kw):
            yield e
            seen += 1
            if seen >= n:
                raise KeyboardInterrupt("simulated crash (test)")

    monkeypatch.setattr(Evaluator, "evaluate", evaluate)


def crashed_and_resumed(tmp_path, monkeypatch, name: str, *extra: str, after: int) -> dict:
    """The fingerprint of a run cut by Ctrl-C after `after` evaluations and then resumed."""
    c, raw = config(tmp_path, name, *extra)
    crash_after(monkeypatch, after)
    with pytest.raises(KeyboardInterrupt):
        run_search(c, raw)
    monkeypatch.undo()
    resume(str(tmp_path / name))
    return fingerprint(tmp_path / name)


def test_resume_after_a_crash_makes_the_same_decisions(tmp_path, uninterrupted, monkeypatch):
    c, raw = config(tmp_path, "b.sqlite")
    crash_after(monkeypatch, 23)
    with pytest.raises(KeyboardInterrupt):
        run_search(c, raw)
    monkeypatch.undo()
    assert Archive.open(tmp_path / "b.sqlite").last_run("search")["status"] == "stopped"
    resume(str(tmp_path / "b.sqlite"))
    assert fingerprint(tmp_path / "b.sqlite") == uninterrupted


def test_resume_with_the_prior_and_screening_makes_the_same_decisions(tmp_path, monkeypatch):
    """With the cost model's prior (on by default on a GPU) the model ranks from the first generation:
    seeds, next_pick/change_family's picks and screening all read it, so a resumed run, which rebuilds
    the model from the archive, must rank exactly as the uninterrupted one did."""
    extra = ("search.cost_prior=on", "search.screen_factor=3")
    c, raw = config(tmp_path, "a.sqlite", *extra)
    run_search(c, raw)
    want = fingerprint(tmp_path / "a.sqlite")
    a = Archive.open(tmp_path / "a.sqlite")
    assert a.get_state(a.last_run("search")["id"], "search")["screened_out"] > 0  # screening did decide
    assert crashed_and_resumed(tmp_path, monkeypatch, "b.sqlite", *extra, after=23) == want


def test_resume_after_kill_minus_9(tmp_path, uninterrupted):
    path = tmp_path / "c.sqlite"
    cmd = [sys.executable, "-m", "evo", "run", *BASE, f"archive.path={path}"]
    with open(tmp_path / "run.err", "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
        deadline = time.monotonic() + 300
        saved = None
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
            try:
                a = Archive.open(path, create=False)
                saved = a.get_state(1, "search")
                a.close()
            except Exception:
                saved = None
            if saved:  # the seeding generation saved: the kill lands in a later generation
                break
        os.killpg(proc.pid, signal.SIGKILL)  # the search and its workers, at once
        proc.wait()
    assert saved and Archive.open(path).count("evaluations") < 40, (tmp_path / "run.err").read_text()[-3000:]
    out = subprocess.run([sys.executable, "-m", "evo", "resume", str(path)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "resuming run 1 at generation" in out.stderr
    assert fingerprint(path) == {**uninterrupted}


def test_resume_refuses_a_finished_run_without_a_new_budget(tmp_path):
    from evo.core.errors import EvoError
    c, raw = config(tmp_path, "d.sqlite", "search.max_evaluations=10")
    run_search(c, raw)
    with pytest.raises(EvoError, match="finished; raise its budget"):
        resume(str(tmp_path / "d.sqlite"))
    resume(str(tmp_path / "d.sqlite"), overrides=["search.max_evaluations=20"])
    assert Archive.open(tmp_path / "d.sqlite").get_state(1, "search")["spent"] >= 20


def test_uniform_policy_and_single_island_ablations_run(tmp_path):
    c, raw = config(tmp_path, "e.sqlite", "+experiment=ablation_uniform", "islands.n=1", "islands.migration=off",
                    "search.max_evaluations=16")
    assert c.mutator.policy == "uniform" and c.islands.n == 1 and c.islands.migration == "off"
    run_search(c, raw)
    state = Archive.open(tmp_path / "e.sqlite").get_state(1, "policy")
    assert state["kind"] == "uniform" and state["shared"] == {} and state["by_bucket"] == {}


def test_policy_learns_to_prefer_the_rewarding_operator():
    import random
    p = OperatorPolicy(["good", "bad", "meh"], learning_rate=0.3, min_probability=0.05)
    rng = random.Random(0)
    for _ in range(300):
        op = p.choose("ctx", rng)
        p.update("ctx", op, {"good": 0.5, "bad": -1.0, "meh": 0.0}[op])
    probs = p.probabilities("ctx")
    assert probs["good"] > 0.8 and probs["bad"] >= 0.05 - 1e-9
    assert abs(sum(probs.values()) - 1) < 1e-9
    assert OperatorPolicy(["a", "b"], kind="uniform").probabilities("x") == {"a": 0.5, "b": 0.5}


def test_migration_on_a_ring_moves_the_best():
    s = Shape(64, 64, 64)
    islands = [Island(i, [s], capacity=3) for i in range(3)]
    for i, isl in enumerate(islands):
        isl.add([Individual(f"k{i}{j}", s, fitness=i + j / 10) for j in range(3)])
    moved = migrate(islands, topology="ring", migrants=1)
    assert moved == 3
    assert any(m.kernel_id == "k22" for m in islands[0].members)  # island 2's best reached island 0
    assert migrate(islands, topology="off", migrants=1) == 0


def test_missing_prerequisites_stop_before_a_run_is_recorded(tmp_path, monkeypatch):
    from evo.core.errors import ConfigError, GpuUnavailable
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")  # no GPU, whatever this machine has
    c, raw = config(tmp_path, "f.sqlite", "evaluator=gpu")
    with pytest.raises(GpuUnavailable, match="evaluator=simulated"):
        run_search(c, raw)
    c, raw = config(tmp_path, "f.sqlite", "llm=anthropic")
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        run_search(c, raw)
    assert not (tmp_path / "f.sqlite").exists()


#: the search's own work between two generations, in Python function calls (the median generation
#: of BASE with the prior and screening: 22k since Family.repair and the source parsing got cheap,
#: 650k before; benchmarks/search/boundary_gaps.md). Counted, not timed: deterministic under the seed,
#: so a slow or busy machine cannot fail it and a return of the old cost cannot pass it.
HOST_CALLS_PER_GENERATION = 60_000
HOST_PHASES = ("_fold", "save", "_plans", "_make_children", "_check_children", "_screen")


def counting_calls(fn, counts: dict[int, int]):
    """Search method fn, adding the Python function calls it makes to counts[its generation] (this
    thread only: compiles run beside it)."""
    def wrapper(search, *args, **kwargs):
        calls = 0

        def profile(frame, event, arg):
            nonlocal calls
            calls += event == "call"
        generation, previous = search.state.generation, sys.getprofile()
        sys.setprofile(profile)
        try:
            return fn(search, *args, **kwargs)
        finally:
            sys.setprofile(previous)
            counts[generation] = counts.get(generation, 0) + calls
    return wrapper


def test_the_host_work_between_generations_stays_small(tmp_path, monkeypatch):
    """While the search folds a generation's results and plans, makes and screens the next one's
    children, the GPU has nothing to run (issue 14): that work must stay a small part of a generation.
    The median generation: the first one also builds each family's table of valid genomes, once."""
    from evo.search.loop import Search
    counts: dict[int, int] = {}
    for name in HOST_PHASES:
        monkeypatch.setattr(Search, name, counting_calls(getattr(Search, name), counts))
    c, raw = config(tmp_path, "a.sqlite", "search.cost_prior=on", "search.screen_factor=3")
    run_search(c, raw)
    per_generation = sorted(counts.values())
    assert len(per_generation) >= 4
    assert per_generation[len(per_generation) // 2] < HOST_CALLS_PER_GENERATION, counts


def test_every_repeated_kernel_is_charged_even_where_screening_drops_the_plan(tmp_path, monkeypatch):
    """A structural operator that proposes a duplicate hands its plan to another and is charged a
    duplicate's penalty. With screening (search.screen_factor=3, the default) most such plans are
    dropped before evaluation; a review found their penalties dropped with them (30 of 40 in one run)."""
    from evo.search.loop import Search
    made = {"repeated": 0}
    make = Search._make_structural

    def counting(self, p, *args):
        make(self, p, *args)
        made["repeated"] += len(p.repeated)
    monkeypatch.setattr(Search, "_make_structural", counting)
    c, raw = config(tmp_path, "dup.sqlite", "search.max_evaluations=80", "search.children_per_island=8",
                    "search.cost_prior=on")
    run_search(c, raw)
    a = Archive.open(tmp_path / "dup.sqlite")
    state = a.get_state(a.last_run("search")["id"], "search")
    assert state["screened_out"] > 0 and made["repeated"] > 0  # the case the test is about happened
    assert state["failures"].get("duplicate_replanned", 0) == made["repeated"]


def test_replay_change_carries_a_find_to_other_shapes_and_resumes_the_same(tmp_path, monkeypatch):
    """search.structural with replay_change (off by default): children that set a new shape best leave
    their change as a find, the operator applies finds to other parents, and a run cut short resumes
    to the same decisions (the finds are part of the saved state)."""
    ops = "mutator.structural=[mutate_one,next_pick,replay_change]"
    # Whether 60 simulated evaluations set new bests by 1% (FIND_GAIN) early enough for replays to follow
    # depended on the trajectory, which any change to a family's source moves (seeds 1-7 in turn stopped
    # doing so). Any child within 10% of its shape's best counts as a find here: the test is about what
    # happens to finds, not how often the test double makes them. Its own MonkeyPatch: the crash
    # helper undoes the test's.
    with pytest.MonkeyPatch.context() as finds_often:
        finds_often.setattr("evo.search.loop.FIND_GAIN", 0.9)
        c, raw = config(tmp_path, "a.sqlite", ops, "search.max_evaluations=60", "search.seed=1")
        run_search(c, raw)
        a = Archive.open(tmp_path / "a.sqlite")
        assert a.get_state(a.last_run("search")["id"], "search")["finds"]  # children left their changes
        want = fingerprint(tmp_path / "a.sqlite")
        assert want["policy"]["uses"] and any("replay_change" in ops_ for ops_ in want["policy"]["uses"].values())
        assert list(a.db.query("select id from kernels where operator = 'replay_change'"))  # it made children
        assert crashed_and_resumed(tmp_path, monkeypatch, "b.sqlite", ops, "search.max_evaluations=60",
                                   "search.seed=1", after=31) == want
