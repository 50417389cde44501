"""`evo compare` with the CPU test double: every arm at the same budget per shape, the table, reuse."""
import pytest

from evo.archive import Archive
from evo.cli.hydra_app import compose
from evo.core.errors import EvoError
from evo.core.shapes import Shape
from evo.mutators.structural import FIND_GAIN
from evo.search.compare import (
    ArmRun,
    archive_path,
    evaluations_to_95,
    finds,
    format_comparison,
    genome_changes,
    run_compare,
)

SHAPES = "shapes.list=[77x4096x4096,1024x1024x1024]"


def test_compare_runs_every_arm_at_the_same_budget_and_keeps_finished_arms(tmp_path, compile_cache):
    out = tmp_path / "cmp"
    c, raw = compose(["evaluator=simulated", "shapes=inline", SHAPES, "llm=none", "search.progress=false",
                      "islands.n=2", "islands.population=4", "search.children_per_island=4", "compare.budget=6",
                      "compare.seeds=2", f"compare.out={out}", f"archive.path={tmp_path / 'unused.sqlite'}"])
    result = run_compare(c, raw)
    assert set(result["arms"]) == {"search", "uniform", "shortlist", "random_tc"}
    for arm, r in result["arms"].items():
        assert r["seeds"] == ([0] if arm == "shortlist" else [0, 1])
        assert all(12 <= n <= 12 + 4 for n in r["evaluations"]), (arm, r["evaluations"])  # 6 per shape x 2
        # where the budget went: per seed, every shape's count, adding up to the seed's evaluations
        assert [sum(counts) for counts in r["evaluations_on_a_shape"]] == r["evaluations"]
        assert all(len(counts) == 2 and min(counts) >= 1 for counts in r["evaluations_on_a_shape"])
        assert all(len(v["vs_library"]) == len(r["seeds"]) for v in r["per_shape"].values())
    assert result["arms"]["shortlist"]["geomean_vs_shortlist"] == [1.0]
    assert (out / "compare.json").is_file()
    for f in result["finds"]:  # each find beats the shortlist, and says how its kernel differs
        assert f["vs_shortlist"] >= FIND_GAIN and f["arm"] != "shortlist" and f["changes"] and f["kernel"]
    runs_before = [Archive.open(archive_path(out, "search", s)).last_run()["id"] for s in (0, 1)]
    # every arm's bests were timed again, side by side, in a session of their own
    retimed = Archive.open(out / "retime.sqlite")
    run = retimed.last_run()
    assert result["retimed"] and run["kind"] == "retime" and run["status"] == "finished"
    bests = {(e["kernel_id"], e["M"], e["N"], e["K"]) for arm, seed in
             [("shortlist", 0)] + [(a, s) for a in ("search", "uniform", "random_tc") for s in (0, 1)]
             for e in Archive.open(archive_path(out, arm, seed)).db.query("select kernel_id, M, N, K from elites")}
    timed = list(retimed.db.query("select kernel_id, M, N, K from evaluations where run_id = ?", [run["id"]]))
    assert len(timed) == 3 * len(bests) and {tuple(t.values()) for t in timed} == bests  # 3 rounds each
    assert all(len(v) == 2 for a, v in ((a, r["geomean_vs_shortlist_retimed"]) for a, r in result["arms"].items())
               if a != "shortlist")
    again = run_compare(c, raw)  # everything finished: tabulated again, nothing re-run, not even the re-timing
    assert [Archive.open(archive_path(out, "search", s)).last_run()["id"] for s in (0, 1)] == runs_before
    assert again["arms"]["search"]["geomean_vs_shortlist"] == result["arms"]["search"]["geomean_vs_shortlist"]
    assert Archive.open(out / "retime.sqlite").last_run()["id"] == run["id"]
    assert again["arms"]["search"]["geomean_vs_shortlist_retimed"] == \
        result["arms"]["search"]["geomean_vs_shortlist_retimed"]
    # report_only with the defaults (24 per shape, 3 seeds, the smoke shapes) tabulates the arms as they ran
    c2, raw2 = compose(["evaluator=simulated", "llm=none", f"compare.out={out}", "compare.report_only=true"])
    report = run_compare(c2, raw2)
    assert report["budget_per_shape"] == 6 and set(report["arms"]) == set(result["arms"])
    assert {str(s) for s in report["arms"]["search"]["per_shape"]} == {"77x4096x4096", "1024x1024x1024"}
    assert report["arms"]["search"]["geomean_vs_shortlist"] == result["arms"]["search"]["geomean_vs_shortlist"]
    shares = result["arms"]["search"]["evaluations_on_a_shape"]
    assert ", ".join(f"{min(c)}-{max(c)}" for c in shares) in format_comparison(result)
    assert "fewest-most" in format_comparison(result)
    assert report["config"]["compare"]["budget"] == 6  # compare.json keeps the configuration the arms ran with
    # a compare at another budget over those arms is refused, not tabulated under its own budget
    c3, raw3 = compose(["evaluator=simulated", "shapes=inline", SHAPES, "llm=none", "compare.budget=8",
                        f"compare.out={out}"])
    with pytest.raises(EvoError, match=r"run at 6 evaluations per shape on 2 shapes, but this compare asks for 8"):
        run_compare(c3, raw3)


def test_report_only_refuses_a_folder_without_finished_arms(tmp_path):
    c, raw = compose(["evaluator=simulated", "llm=none", f"compare.out={tmp_path / 'none'}", "compare.report_only=true"])
    with pytest.raises(EvoError, match="no finished arm in"):
        run_compare(c, raw)
    assert not (tmp_path / "none").exists()


def test_evaluations_to_95_count_per_shape():
    a, b = Shape(1, 64, 64), Shape(2, 64, 64)
    trace = [{"M": 1, "N": 64, "K": 64, "speedup": 0.5}, {"M": 2, "N": 64, "K": 64, "speedup": 1.0},
             {"M": 1, "N": 64, "K": 64, "speedup": None}, {"M": 1, "N": 64, "K": 64, "speedup": 0.96}]
    assert evaluations_to_95(trace, {a: 1.0, b: 1.0}) == {a: 3, b: 1}


def test_compare_is_a_hydra_command_with_help():
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-m", "evo", "compare", "--help"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "usage: evo compare" in out.stdout and "compare.budget=N" in out.stdout


def test_each_arm_gets_the_same_budget_and_its_own_archive(tmp_path):
    from evo.search.compare import arm_config
    c, _ = compose(["evaluator=simulated", "shapes=inline", SHAPES, "compare.budget=5", f"compare.out={tmp_path}"])
    arms = {arm: arm_config(c, arm, 1)
            for arm in ("search", "uniform", "screened", "unscreened", "shortlist", "random_tc", "no_prior", "replay",
                        "floor")}
    assert {a.search.max_evaluations for a in arms.values()} == {10} and {a.sweep.budget for a in arms.values()} == {5}
    assert arms["uniform"].mutator.policy == "uniform" and arms["search"].mutator.policy == "reinforce"
    assert arms["screened"].search.screen_factor == 3 == arms["search"].search.screen_factor
    assert arms["unscreened"].search.screen_factor == 1
    assert arms["no_prior"].search.cost_prior == "off" and arms["search"].search.cost_prior == "auto"
    assert arms["shortlist"].sweep.sample == "shortlist" and arms["random_tc"].sweep.sample == "random"
    c, _ = compose(["evaluator=simulated", "shapes=inline", SHAPES, "sweep.sample=shortlist", "sweep.order=prior"])
    assert arm_config(c, "shortlist", 0).sweep.order == "heuristic"  # the baseline is the families' own ranking
    assert arms["replay"].mutator.structural == [*arms["search"].mutator.structural, "replay_change"]
    assert "replay_change" not in arms["search"].mutator.structural
    assert arms["floor"].search.min_evaluations_per_shape == 1 and arms["search"].search.min_evaluations_per_shape == 0
    assert len({a.archive.path for a in arms.values()}) == 9


def test_a_find_says_how_it_differs_from_the_shortlists_kernel():
    """What the search found that the shortlist lacks, as the H200 compare of the thirteenth session
    showed it: the shortlist's own split-K pick with 7 pipeline stages instead of 5, 8.8% faster."""
    shape, other = Shape(197, 768, 3072), Shape(64, 1024, 4096)
    pick = {"BM": 72, "BN": 64, "SPLIT_K": 3, "FIXUP": 1, "STAGES": 5}
    ref = ArmRun("shortlist", 0, best_ms={shape: 8.443, other: 8.0}, retimed_ms={shape: 8.44},
                 genome={shape: {"family": "hopper", "params": pick, "options": {}, "kernel": "a"},
                         other: {"family": "hopper", "params": pick, "options": {}, "kernel": "c"}})
    deeper = {"family": "hopper", "params": dict(pick, STAGES=7), "options": {"expensive": "1"},
              "operator": "compile_options", "kernel": "b"}
    arm = ArmRun("uniform", 2, best_ms={shape: 7.747, other: 7.99}, retimed_ms={shape: 7.757},
                 genome={shape: deeper, other: {"family": "skinny", "params": {}, "kernel": "d"}})
    found = finds([ref, arm], [shape, other])
    assert len(found) == 1  # 8.0 / 7.99 is within the noise: not a find
    f = found[0]
    assert f["retimed"] and abs(f["vs_shortlist"] - 8.44 / 7.757) < 1e-9 and f["operator"] == "compile_options"
    assert f["changes"] == "STAGES 5 -> 7, option expensive - -> 1"
    assert genome_changes(ref.genome[other], arm.genome[other]) == "family hopper -> skinny"
    assert genome_changes(ref.genome[shape], dict(ref.genome[shape])) == "the same kernel (timed again)"
    table = format_comparison({"shapes": [], "arms": {}, "finds": found})
    assert "197x768x3072" in table and "STAGES 5 -> 7" in table
    assert "no arm beat the shortlist" in format_comparison({"shapes": [], "arms": {}, "finds": []})


def test_a_compare_refused_before_any_arm_leaves_no_folder(tmp_path, monkeypatch):
    """A newcomer's `evo compare` without a GPU stopped with a clear error but left an empty folder."""
    import pytest

    from evo.core.errors import EvoError
    from evo.search import compare

    def refuse(*args):
        raise EvoError("no NVIDIA GPU is visible here (test)")
    monkeypatch.setattr(compare, "run_arm", refuse)
    out = tmp_path / "runs" / "compare"
    c, raw = compose(["evaluator=simulated", "shapes=inline", SHAPES, f"compare.out={out}"])
    with pytest.raises(EvoError):
        run_compare(c, raw)
    assert not out.exists() and (tmp_path / "runs").exists()


def test_compare_shows_what_the_operator_policy_learned():
    """The learned policy's final probabilities per operator (weighted by each context's uses, with
    the least and largest over contexts), read from a search's saved policy state; a uniform policy's
    are all 1 / operators."""
    from evo.mutators.policy import OperatorPolicy
    from evo.search.compare import ArmRun, _format_policy, _policy_over_seeds, learned_policy
    ops = ["mutate_one", "mutate_many", "next_pick"]
    policy = OperatorPolicy(ops)
    for _ in range(30):
        policy.update("1-10 GFLOP|hopper", "mutate_many", -0.5)
        policy.update("1-10 GFLOP|hopper", "next_pick", 0.3)
    policy.update("<1 GFLOP|skinny", "mutate_one", 0.1)
    probs, weights = learned_policy(policy.state() | {"kind": "reinforce", "operators": ops})
    assert weights == [60, 1]  # contexts in sorted order: "1-10 GFLOP|hopper", "<1 GFLOP|skinny"
    assert probs["mutate_many"][0] < 1 / 3 < probs["next_pick"][0]
    run = ArmRun("search", 0, policy=probs, policy_weights=weights)
    table = _policy_over_seeds([run])
    assert table["mutate_many"]["min"] == min(probs["mutate_many"])
    assert abs(table["next_pick"]["mean"] - (60 * probs["next_pick"][0] + probs["next_pick"][1]) / 61) < 1e-12
    uniform = OperatorPolicy(ops, kind="uniform")
    uniform.update("1-10 GFLOP|hopper", "mutate_many", -0.5)
    flat, _ = learned_policy(uniform.state())
    assert all(p == [1 / 3] for p in flat.values())
    text = _format_policy({"arms": {"search": {"policy": table}, "uniform": {"policy": _policy_over_seeds(
        [ArmRun("uniform", 0, policy=flat, policy_weights=[1])])}}}, ["search", "uniform"])
    assert "uniform: 1 / its operators, 0.33 for 3" in text and "0.33 [0.33-0.33]" in text and "next_pick" in text
    far = max(max(abs(t["min"] - 1 / 3), abs(t["max"] - 1 / 3)) for t in table.values())
    assert f"search: at most {far:.3f} from its uniform 1/3 in any context; uniform: at most 0.000" in text
    # an arm with an operator more (replay's replay_change) is measured against its own 1/4
    four = _policy_over_seeds([ArmRun("replay", 0, policy={**flat, "replay_change": [0.25]}, policy_weights=[1])])
    assert "from its uniform 1/4" in _format_policy({"arms": {"replay": {"policy": four}}}, ["replay"])
    assert learned_policy(None) == ({}, [])  # an archive without a policy (a sweep)
