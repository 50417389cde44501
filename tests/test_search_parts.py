"""The search's parts: the shape bandit, the repair queue, the shared operator policy, compile
options, and variation that never touches the process-global `random`."""
import math
import random
import re

import pytest

from evo.archive import Archive
from evo.cli.hydra_app import compose
from evo.core.compile_options import OptionError, nvcc_flags, options_of, with_options
from evo.core.kernel import Candidate
from evo.core.shapes import Shape
from evo.families import FAMILIES
from evo.islands import Individual, Island
from evo.mutators.policy import OperatorPolicy
from evo.mutators.structural import OPERATORS
from evo.search import run_search
from evo.search.allocation import ShapeAllocator
from tests.fake_anthropic import FakeAnthropic, message, prompt_of, source_in

A, B, C = Shape(64, 4096, 4096), Shape(256, 4096, 4096), Shape(1024, 4096, 4096)


def _spend_where_only_b_improves(alloc: ShapeAllocator, evaluations: int) -> dict[str, int]:
    """`evaluations` picks of A, B or C, each observed; only B's time keeps falling. The share per shape."""
    times = {A: 0.05, B: 0.05, C: 0.05}
    for _ in range(evaluations):
        s = alloc.pick([A, B, C])
        if s == B:
            times[B] *= 0.97
        alloc.observe(s, times[s], 0.5 * 0.05 / times[s])
    return alloc.share()


def test_the_bandit_tries_every_shape_then_spends_on_the_shape_that_improves():
    alloc = ShapeAllocator({A: 0.01, B: 0.01, C: 0.01})
    assert {alloc.pick([A, B, C]) for _ in range(3)} == {A, B, C}  # unmeasured shapes first, spread
    alloc.settle()
    for s in (A, B, C):
        alloc.observe(s, 0.05, 0.5)
    share = _spend_where_only_b_improves(alloc, 60)
    assert share[str(B)] > share[str(A)] + 10 and share[str(B)] > share[str(C)] + 10, share
    assert min(share.values()) >= 4  # exploration keeps the others alive
    again = ShapeAllocator({A: 0.01, B: 0.01, C: 0.01})
    again.load(alloc.to_json())
    assert again.to_json() == alloc.to_json() and again.pick([A, B, C]) == alloc.pick([A, B, C])


def test_with_a_minimum_every_shape_gets_that_many_evaluations_before_the_bandit_chooses():
    """Without it the bandit spends on the shape that improves and can leave another at a handful (an H100
    compare gave shapes 4 to 79 of 336 evaluations); with search.min_evaluations_per_shape each shape gets
    that many first, then the bandit spends as before."""
    free, floored = (_spend_where_only_b_improves(ShapeAllocator({A: 0.01, B: 0.01, C: 0.01}, min_evaluations=m), 45)
                     for m in (0, 10))
    assert min(free.values()) < 10 and min(floored.values()) >= 10, (free, floored)
    assert floored[str(B)] == max(floored.values()) > 10  # past the floor, the improving shape still gets the rest


def test_a_shape_at_its_floor_gets_less_than_one_with_headroom():
    alloc = ShapeAllocator({A: 0.05, B: 0.01})
    alloc.observe(A, 0.0501, 1.2)  # at its roofline floor and ahead of the libraries
    alloc.observe(B, 0.05, 0.5)  # 5x off its floor, behind the libraries
    assert alloc.gain(B) > alloc.gain(A)


def test_a_tiny_shape_at_launch_latency_does_not_outbid_a_large_one_with_headroom():
    tiny = Shape(64, 64, 64)
    alloc = ShapeAllocator({tiny: 6e-6, B: 0.01}, latency_floor_ms=0.002)  # roofline floors: ns for 64^3
    alloc.observe(tiny, 0.00231, 1.0)  # 2.31 us, as fast as the libraries: the launch-latency floor
    alloc.observe(B, 0.0125, 0.95)  # 80% of its roofline, 5% behind the libraries
    assert alloc.headroom(tiny) < 0.1 < alloc.headroom(B)
    assert alloc.gain(B) > alloc.gain(tiny)
    roofline_only = ShapeAllocator({tiny: 6e-6, B: 0.01})  # search.latency_floor_us=0, the default
    roofline_only.observe(tiny, 0.00231, 1.0)
    roofline_only.observe(B, 0.0125, 0.95)
    assert roofline_only.headroom(tiny) == 1.0 and roofline_only.gain(tiny) > roofline_only.gain(B)


def test_the_policy_shares_what_it_learns_across_contexts():
    p = OperatorPolicy(["good", "bad"], learning_rate=0.3, min_probability=0.02)
    rng = random.Random(0)
    for _ in range(200):
        op = p.choose("1-10 GFLOP|hopper", rng)
        p.update("1-10 GFLOP|hopper", op, {"good": 0.5, "bad": -1.0}[op])
    unseen = p.probabilities(">=1 TFLOP|ampere")  # no use in this bucket or family yet
    assert unseen["good"] > 0.7
    assert p.probabilities("1-10 GFLOP|hopper")["good"] > unseen["good"]  # the offsets add what is particular
    state = p.state()
    assert set(state) >= {"shared", "by_bucket", "by_family", "baseline", "uses"}
    q = OperatorPolicy(["good", "bad"], learning_rate=0.3, min_probability=0.02)
    q.load(state)
    assert q.probabilities("x|simt") == p.probabilities("x|simt")


def test_compile_options_are_part_of_the_source_and_only_whitelisted(compiler):
    amp = FAMILIES["ampere"].candidate(FAMILIES["ampere"].default)
    capped = with_options(amp.source, {"minblocks": "4", "dlcm": "cg"})
    assert options_of(capped) == {"minblocks": "4", "dlcm": "cg"}
    assert "__launch_bounds__(THREADS, 4)" in capped and nvcc_flags(capped) == ("-Xptxas", "-dlcm=cg")
    assert with_options(capped, {}) == amp.source  # options removed: the seed again
    plain, small = compiler.compile(amp.source), compiler.compile(capped)
    assert plain.ok and small.ok and small.resources.registers <= 128 < plain.resources.registers
    assert compiler.key(capped) != compiler.key(amp.source)
    bad = "// evo-nvcc: maxrregcount=16 Xcompiler=-fplugin\n" + amp.source
    with pytest.raises(OptionError, match="not allowed"):
        options_of(bad)
    r = compiler.compile(bad)
    assert not r.ok and "not allowed" in r.log


def test_the_compile_options_operator_changes_one_option_and_children_inherit_options():
    rng = random.Random(1)
    parent = FAMILIES["ampere"].candidate(FAMILIES["ampere"].default)
    op = OPERATORS["compile_options"]
    child = op.apply([parent], rng)
    assert child.id != parent.id and child.params == parent.params and len(options_of(child.source)) == 1
    grandchild = OPERATORS["mutate_one"].apply([child], rng)
    assert options_of(grandchild.source).items() <= options_of(child.source).items()
    assert options_of(grandchild.source) == options_of(child.source) or "minblocks" in options_of(child.source)


def test_revert_gene_moves_a_failed_child_back_towards_its_parent():
    fam = FAMILIES["ampere"]
    parent = fam.candidate(fam.default)
    failed = fam.candidate(fam.repair(dict(fam.default, STAGES=2, BK=64 if fam.default.get("BK") != 64 else 32),
                                      random.Random(0)))
    differing = {k for k in fam.space if failed.params[k] != parent.params[k]}
    assert differing
    op = OPERATORS["revert_gene"]
    assert op.repairs and op.applies([failed, parent]) and not op.applies([parent, parent])
    child = op.apply([failed, parent], random.Random(0))
    assert sum(child.params[k] != parent.params[k] for k in fam.space) < len(differing) or len(differing) == 1


def test_variation_never_touches_the_global_random():
    state = random.getstate()
    rng = random.Random(3)
    fam = FAMILIES["hopper"]
    a, b = fam.candidate(fam.default), fam.candidate(fam.suggest(512, 4096, 4096)[0])
    island = Island(0, [A], members=[Individual(a.id, A, 1.0), Individual(b.id, A, 0.5)])
    for _ in range(20):
        island.select(2, rng)
        for name in ("mutate_one", "mutate_many", "crossover", "change_family", "compile_options"):
            OPERATORS[name].apply([a, b], rng)
    assert random.getstate() == state


def test_failed_children_reach_the_llm_repair_prompts(monkeypatch, tmp_path, compile_cache):
    """The fake model answers improvement prompts with a wrong kernel and repair prompts with a fix."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")

    def behaviour(req, n):
        if req["max_tokens"] == 1:  # the test call before the first generation
            return 200, message(""), 0
        prompt = prompt_of(req)
        block = re.search(r"// @evo block\s*=.*", source_in(prompt)).group(0)
        if "Operator: repair_incorrect" in prompt:
            return 200, message(f"<<<<<<< SEARCH\n{block}\n// evo-sim: incorrect\n=======\n{block}\n"
                                ">>>>>>> REPLACE\n"), 0
        return 200, message(f"<<<<<<< SEARCH\n{block}\n=======\n{block}\n// evo-sim: incorrect\n>>>>>>> REPLACE\n"), 0

    with FakeAnthropic(behaviour) as server:
        c, raw = compose(["evaluator=simulated", "shapes=inline", "shapes.list=[1024x1024x1024]", "llm=anthropic",
                          f"llm.base_url={server.url}", "llm.prompts=[deepen_pipeline,repair_incorrect]",
                          "mutator.structural=[]", "search.max_evaluations=10", "islands.n=1",
                          "islands.population=4", "search.children_per_island=4", "search.progress=false",
                          "search.seeds_per_shape=1", "islands.specialize=none", "search.seed=1",
                          "search.repair_share=0.5", f"archive.path={tmp_path / 'r.sqlite'}"])
        result = run_search(c, raw)
        repair_prompts = [r for r in server.requests if "Operator: repair_incorrect" in prompt_of(r)]
    assert repair_prompts, "no failed child reached a repair prompt"
    archive = Archive.open(result.archive)
    state = archive.get_state(result.run_id, "search")
    assert state["repair_uses"] == len(repair_prompts)
    ops = {r["operator"] for r in archive.db.query("select operator from llm_calls")}
    assert {"llm:deepen_pipeline", "llm:repair_incorrect"} <= ops


def _simulated_measurements(n: int, seed: int):
    """(candidate, shape, log(time / floor)) from the CPU test double's model: modelled, not measured."""
    import math

    from evo.evaluation.simulated import PEAKS, model_time_ms
    rng = random.Random(seed)
    shapes = [Shape(1, 6144, 4096), Shape(77, 4096, 4096), Shape(333, 4096, 14336), Shape(2048, 28672, 4096),
              Shape(197, 3072, 768), Shape(1024, 1024, 1024), Shape(64, 1024, 4096), Shape(4096, 4096, 4096)]
    out = []
    while len(out) < n:
        fam = FAMILIES[rng.choice(["hopper", "ampere"])]
        cand, shape = fam.candidate(fam.random(rng)), rng.choice(shapes)
        if cand.declaration.supports(shape):
            out.append((cand, shape, math.log(model_time_ms(cand.source, shape) / PEAKS.floor_ms(shape.flops,
                                                                                                   shape.min_bytes))))
    return out


def test_the_cost_model_ranks_held_out_children_and_screening_keeps_most_of_the_best():
    from evo.search.cost_model import CostModel, features, screen, spearman
    data = _simulated_measurements(300, seed=0)
    train, held_out = data[:200], data[200:]
    model = CostModel()
    for cand, shape, y in train:
        model.add(f"{cand.id}|{shape}", features(cand, shape), y)
    predicted = model.predict([features(c, s) for c, s, _ in held_out])
    truth = [y for _, _, y in held_out]
    assert spearman(predicted, truth) > 0.7
    # evaluating the predicted best third (no exploration) finds most of the true best tenth
    kept = set(screen(predicted, len(held_out) // 3, random.Random(0), explore=0.0))
    best = sorted(range(len(truth)), key=truth.__getitem__)[:len(truth) // 10]
    assert sum(i in kept for i in best) >= 0.7 * len(best)
    with_exploration = screen(predicted, 30, random.Random(0), explore=0.25)
    assert len(with_exploration) == 30 and sum(i not in kept for i in with_exploration) >= 1


def test_a_search_with_screening_keeps_children_from_the_gpu(tmp_path, compile_cache):
    c, raw = compose(["evaluator=simulated", "shapes=inline", "shapes.list=[77x4096x4096,1024x1024x1024]",
                      "llm=none", "search.progress=false", "search.max_evaluations=26", "islands.n=1",
                      "islands.population=6", "search.children_per_island=6", "search.screen_factor=3",
                      "search.seed=2", f"archive.path={tmp_path / 's.sqlite'}"])
    result = run_search(c, raw)
    state = Archive.open(result.archive).get_state(result.run_id, "search")
    assert state["screened_out"] > 0 and 26 <= state["spent"] <= 32


def test_next_pick_walks_the_shortlist_of_the_target_shape():
    fam, shape = FAMILIES["hopper"], Shape(333, 4096, 14336)
    picks = fam.suggest(shape.M, shape.N, shape.K, limit=64)
    first = fam.candidate(picks[0])
    child = OPERATORS["next_pick"].apply([first], random.Random(0), shape=shape)
    assert child.params == picks[1] and child.parents == (first.id,)
    off_list = fam.candidate(fam.repair(dict(fam.default, GROUP_M=1, STAGES=2), random.Random(0)))
    assert OPERATORS["next_pick"].apply([off_list], random.Random(0), shape=shape).params == picks[0]


def test_next_pick_proposes_the_best_ranked_pick_the_shape_has_not_had():
    from evo.mutators.structural import config_key
    fam, shape = FAMILIES["hopper"], Shape(197, 768, 3072)
    picks = fam.suggest(shape.M, shape.N, shape.K, limit=64)
    parent = fam.candidate(picks[0])
    tried = {config_key("hopper", p) for p in picks[:3] + picks[4:6]}
    child = OPERATORS["next_pick"].apply([parent], random.Random(0), shape=shape, tried=tried)
    assert child.params == picks[3]
    everything = {config_key("hopper", p) for p in picks}
    assert OPERATORS["next_pick"].apply([parent], random.Random(0), shape=shape, tried=everything) is None


def test_change_family_jumps_to_another_familys_best_untried_pick_for_the_shape():
    from evo.mutators.structural import config_key
    shape = Shape(333, 4096, 14336)
    parent = FAMILIES["hopper"].candidate(FAMILIES["hopper"].suggest(shape.M, shape.N, shape.K)[0])
    ampere = FAMILIES["ampere"].suggest(shape.M, shape.N, shape.K, limit=64)
    child = OPERATORS["change_family"].apply([parent], random.Random(0), shape=shape,
                                             tried={config_key("ampere", ampere[0])})
    assert child.family == "ampere" and child.params == ampere[1]  # skinny does not cover M = 333; simt is never the target
    tried_all = {config_key("ampere", p) for p in ampere}
    fallback = OPERATORS["change_family"].apply([parent], random.Random(0), shape=shape, tried=tried_all)
    assert fallback.family != "hopper"  # nothing untried left: a random configuration of another family


def test_with_the_cost_model_next_pick_and_change_family_take_its_predicted_fastest_open_pick():
    from evo.mutators.structural import OPEN_POOL, config_key
    fam, shape = FAMILIES["hopper"], Shape(333, 4096, 14336)
    picks = fam.suggest(shape.M, shape.N, shape.K, limit=64)
    parent = fam.candidate(picks[0])
    order = {config_key("hopper", p): i for i, p in enumerate(picks)}
    # a model that prefers the shortlist's later picks: the open pick it chooses is the last of the pool
    backwards = lambda pairs: [-order.get(config_key(c.family, c.params), 0) for c, _ in pairs]  # noqa: E731
    tried = {config_key("hopper", picks[0])}
    child = OPERATORS["next_pick"].apply([parent], random.Random(0), shape=shape, tried=tried, predict=backwards)
    assert child.params == picks[OPEN_POOL]  # picks[1..OPEN_POOL] were the pool
    assert OPERATORS["next_pick"].apply([parent], random.Random(0), shape=shape, tried=tried,
                                        predict=lambda pairs: None).params == picks[1]  # cannot rank yet: first open
    ampere = FAMILIES["ampere"].suggest(shape.M, shape.N, shape.K, limit=64)
    order.update({config_key("ampere", p): i for i, p in enumerate(ampere)})
    jumped = OPERATORS["change_family"].apply([parent], random.Random(0), shape=shape, tried=set(), predict=backwards)
    assert jumped.family == "ampere" and jumped.params == ampere[min(OPEN_POOL, len(ampere)) - 1]


def test_the_cost_models_prior_ranks_before_any_measurement_and_yields_to_measurements():
    import numpy as np

    from evo.search.cost_model import CostModel, Prior, features
    data = _simulated_measurements(300, seed=1)
    fitted = CostModel()
    for cand, shape, y in data[:200]:
        fitted.add(f"{cand.id}|{shape}", features(cand, shape), y)
    fitted.fit()
    prior = Prior("test", fitted._mu, fitted._sd, fitted._w, 200)
    fresh = CostModel(prior=prior)
    held = [features(c, s) for c, s, _ in data[200:]]
    assert fresh.ready and not CostModel().ready
    assert fresh.predict([]) == []
    assert np.allclose(fresh.predict(held), fitted.predict(held))  # no rows: the prior's predictions
    # a prior that is wrong (every weight flipped) is overruled by enough measurements
    wrong = CostModel(prior=Prior("test", fitted._mu, fitted._sd, -fitted._w, 200))
    for cand, shape, y in data[:200]:
        wrong.add(f"{cand.id}|{shape}", features(cand, shape), y)
    from evo.search.cost_model import spearman
    truth = [y for _, _, y in data[200:]]
    assert spearman(wrong.predict(held), truth) > 0.6 > spearman(CostModel(prior=wrong.prior).predict(held), truth)


def test_the_cost_model_tells_the_ordered_fixup_from_atomics_and_counts_its_parts():
    """FIXUP=1 kernels differ from their atomic twins in two features only (before the last, ping-pong):
    the flag and log2 of the partials the last CTA adds in turn (split-K's count, or the tail split's
    parts at that shape); the shipped prior, fit since the seventeenth session to sweeps that hold
    FIXUP=1 kernels, weighs them (it used to weigh them 0: its archives predated the gene)."""
    import math

    from evo.search import cost_prior
    from evo.search.cost_model import features
    fam, shape = FAMILIES["hopper"], Shape(512, 10240, 8192)  # 160 tiles of 128x256: a last round of 28
    for change, parts in ((dict(SPLIT_K=2), 2), (dict(TAIL_SPLIT=16), 4)):  # 132 // 28 = 4 parts
        atomic, ordered = (features(fam.candidate(dict(fam.default, FIXUP=f, **change)), shape) for f in (0, 1))
        assert ordered[:-3] == atomic[:-3] and atomic[-3:] == [0.0, 0.0, 0.0]
        assert ordered[-3:] == [1.0, math.log2(parts), 0.0], change
    shipped = cost_prior.load()
    assert shipped is not None and all(w != 0.0 for w in shipped.w[-4:-2])  # the intercept is last


def test_the_cost_model_tells_ping_pong_consumers_from_their_twin():
    """PINGPONG=1 differs from its cooperative twin in the last feature alone; the shipped prior's archives
    hold no ping-pong kernel, so its weight there is 0 and a run learns it from its own measurements."""
    from evo.search import cost_prior
    from evo.search.cost_model import features
    fam, shape = FAMILIES["hopper"], Shape(4096, 1024, 256)
    base = dict(fam.default, BM=128, BN=128, CONSUMERS=2, PERSISTENT=1, CTAS_PER_SM=1, SPLIT_K=1, TAIL_SPLIT=1,
                CLUSTER_M=1, SPLIT_CLUSTER=0, STREAM_K=0, FIXUP=0, SWAP_AB=0, STAGES=4)
    cooperative, pingpong = (features(fam.candidate(dict(base, PINGPONG=p)), shape) for p in (0, 1))
    assert cooperative[:-1] == pingpong[:-1] and (cooperative[-1], pingpong[-1]) == (0.0, 1.0)
    shipped = cost_prior.load()
    assert shipped is not None and shipped.w[-2] == 0.0 and shipped.n_features == len(pingpong)


def test_the_shipped_prior_loads_and_a_prior_of_other_features_is_refused(tmp_path, caplog):
    import json

    from evo.search import cost_prior
    shipped = cost_prior.load()
    assert shipped is not None and shipped.gpu == "NVIDIA H200" and shipped.rows > 1000
    d = json.loads(cost_prior.PRIOR_PATH.read_text())
    d["mu"], d["sd"] = d["mu"][:-1], d["sd"][:-1]
    (tmp_path / "old.json").write_text(json.dumps(d))
    assert cost_prior.load(tmp_path / "old.json") is None and "rebuild it" in caplog.text
    d = json.loads(cost_prior.PRIOR_PATH.read_text())
    d["sd"] = d["sd"][:-1]  # a hand-edited file: the scale of one feature missing
    (tmp_path / "cut.json").write_text(json.dumps(d))
    assert cost_prior.load(tmp_path / "cut.json") is None


def test_a_prior_is_built_from_an_archive_without_its_held_out_shapes(tmp_path, compile_cache):
    from evo.cli.hydra_app import compose as compose_
    from evo.search.cost_prior import build, load, rows_from_archive, save
    from evo.search.sweep import run_sweep
    c, raw = compose_(["evaluator=simulated", "shapes=inline", "shapes.list=[77x4096x4096,1024x1024x1024]",
                       "sweep.budget=8", "search.progress=false", f"archive.path={tmp_path / 'a.sqlite'}"])
    run_sweep(c, raw)
    rows = rows_from_archive(tmp_path / "a.sqlite")
    assert {s for _, _, s, _ in rows} == {Shape(77, 4096, 4096), Shape(1024, 1024, 1024)}
    held = frozenset({Shape(77, 4096, 4096)})
    assert {s for _, _, s, _ in rows_from_archive(tmp_path / "a.sqlite", exclude=held)} == {Shape(1024, 1024, 1024)}
    prior = build([tmp_path / "a.sqlite"], exclude=held, gpu="simulated")
    save(prior, tmp_path / "p.json", sources=["a.sqlite"], exclude=["77x4096x4096"])
    again = load(tmp_path / "p.json")
    assert again is not None and again.rows == prior.rows == len(rows) - sum(s in held for _, _, s, _ in rows)


def test_a_search_with_the_prior_seeds_the_models_choice_of_each_shortlist(tmp_path, compile_cache):
    import random as random_

    from evo.search.cost_model import CostModel, features
    from evo.search.cost_prior import load
    from evo.search.sweep import plan, sampled_families
    shapes = [Shape(77, 4096, 4096), Shape(1024, 1024, 1024)]
    model = CostModel(prior=load())
    expected = {"on": set(), "off": set()}  # (shape, kernel) of every seed: per shape, one pick per family
    for shape in shapes:
        # one unspecialized island: the tensor-core families a shortlist takes there, + skinny
        for family in sampled_families(["hopper", "ampere"], shape) + ["skinny"]:
            pool = plan([family], shape, budget=12, sample="shortlist", rng=random_.Random(0), num_sms=132)
            if pool:
                predicted = model.predict([features(c, shape) for c in pool])
                expected["on"].add((shape, pool[min(range(len(pool)), key=lambda i: (predicted[i], i))].id))
                expected["off"].add((shape, pool[0].id))
    for prior in ("on", "off"):
        c, raw = compose(["evaluator=simulated", "shapes=inline", "shapes.list=[77x4096x4096,1024x1024x1024]",
                          "llm=none", "search.progress=false", "search.max_evaluations=12", "islands.n=1",
                          "islands.specialize=none", "search.seeds_per_shape=1", f"search.cost_prior={prior}",
                          f"archive.path={tmp_path / (prior + '.sqlite')}"])
        a = Archive.open(run_search(c, raw).archive)
        seeds = {(Shape(r["M"], r["N"], r["K"]), r["kernel_id"]) for r in a.db.query(
            "select M, N, K, kernel_id from evaluations where generation = 0")}
        assert seeds == expected[prior], prior
    assert expected["on"] != expected["off"]  # the model's choice is not the shortlist's first pick


def test_sweep_order_prior_takes_the_models_fastest_of_the_24_pick_shortlist(tmp_path, compile_cache):
    """sweep.order=prior: a shape's `budget` picks are the prior's predicted fastest of the shortlist a
    24-pick sweep evaluates, fastest first; the heuristic order is the families' own; the option is
    refused for samples without a ranking, and a sweep runs with it."""
    import random as random_

    from evo.core.errors import ConfigError
    from evo.search.cost_model import CostModel, features
    from evo.search.cost_prior import load
    from evo.search.sweep import PRIOR_POOL, plan, run_sweep
    model, families = CostModel(prior=load()), ["ampere", "hopper", "simt", "skinny"]
    for shape in (Shape(333, 6144, 4096), Shape(1, 6144, 4096)):
        full = plan(families, shape, budget=PRIOR_POOL, sample="shortlist", rng=random_.Random(0), num_sms=132)
        got = plan(families, shape, budget=8, sample="shortlist", rng=random_.Random(0), num_sms=132, prior=model)
        predicted = dict(zip((c.id for c in full), model.predict([features(c, shape) for c in full])))
        assert len(got) == 8 and {c.id for c in got} <= {c.id for c in full}
        assert [predicted[c.id] for c in got] == sorted(predicted.values())[:8]
        heuristic = plan(families, shape, budget=8, sample="shortlist", rng=random_.Random(0), num_sms=132)
        assert [c.id for c in heuristic] == [c.id for c in full[:8]]
    c, raw = compose(["evaluator=simulated", "sweep.order=prior", f"archive.path={tmp_path / 'r.sqlite'}"])
    with pytest.raises(ConfigError, match="sweep.order=prior orders a shortlist"):
        run_sweep(c, raw)  # sweep.sample is random by default
    assert not (tmp_path / "r.sqlite").exists()  # refused before the session started
    c, raw = compose(["evaluator=simulated", "shapes=inline", "shapes.list=[333x6144x4096]", "sweep.sample=shortlist",
                      "sweep.order=prior", "sweep.budget=3", "search.progress=false",
                      f"archive.path={tmp_path / 's.sqlite'}"])
    run_sweep(c, raw)
    a = Archive.open(tmp_path / "s.sqlite")
    expected = plan(families, Shape(333, 6144, 4096), budget=3, sample="shortlist", rng=random_.Random(0),
                    num_sms=132, prior=model)  # the simulated GPU has 132 SMs
    assert sorted(r[0] for r in a.db.execute("select kernel_id from evaluations")) == sorted(c.id for c in expected)


def test_reward_against_best_credits_only_children_that_move_the_shape():
    from types import SimpleNamespace

    from evo.search.loop import Search
    from evo.search.state import Plan
    plan = Plan(0, "mutate_one", None, Shape(77, 4096, 4096), 0.5, "ctx", shape_best=0.9)
    against = lambda what: Search._reference(SimpleNamespace(c=SimpleNamespace(mutator=SimpleNamespace(  # noqa: E731
        reward_against=what))), plan)
    assert against("parent") == 0.5 and against("best") == 0.9


def test_a_wasted_evaluation_costs_more_than_a_duplicate_and_a_gain_beyond_noise_is_credited():
    from evo.config import MutatorConfig
    from evo.core.records import Status
    from evo.mutators.rewards import reward
    cfg = MutatorConfig()
    wasted = reward(Status.OK, 0.50, 0.80, cfg)  # worse than its parent: it only spent an evaluation
    noise = reward(Status.OK, 0.805, 0.80, cfg)  # within the timing noise: no credit either
    gain = reward(Status.OK, 0.88, 0.80, cfg)
    assert wasted == noise == -cfg.evaluation_cost < reward(Status.OK, 0.5, 0.8, cfg, duplicate=True) < 0 < gain
    assert abs(gain - math.log(1.1)) < 1e-9


def test_an_operator_with_nothing_to_propose_hands_its_plan_to_another_and_is_not_charged():
    """On the H200 ten uses of next_pick with nothing to propose, each charged -1 like a compile error,
    pinned it at the policy's floor while it set new bests in 4 of its 21 evaluations; rewarded as
    duplicates instead, it was chosen again and again for nothing and a small search stalled."""
    from types import SimpleNamespace

    from evo.config import MutatorConfig
    from evo.mutators.rewards import reward_without_child
    from evo.search.loop import Search
    from evo.search.state import Plan
    shape = Shape(77, 4096, 4096)
    llm = Plan(0, "llm:rewrite", None, shape, 0.5, "ctx")
    Search._settle(None, llm, lambda: None)  # type: ignore[arg-type]
    assert llm.candidate is None and llm.failure_kind == ""  # an LLM answer without an edit cost money

    made = SimpleNamespace(id="k")
    empty = SimpleNamespace(applies=lambda parents, info=None: True, apply=lambda *a, **k: None)
    fine = SimpleNamespace(applies=lambda parents, info=None: True, apply=lambda *a, **k: made)
    policy = OperatorPolicy(["next_pick", "mutate_one", "revert_gene"])
    fake = SimpleNamespace(operators={"next_pick": empty, "mutate_one": fine, "revert_gene": SimpleNamespace(
        repairs=True, applies=lambda parents, info=None: True, apply=lambda *a, **k: made)}, policy=policy,
        rng=random.Random(0), predict=None, _info=lambda parents, shape: {}, state=SimpleNamespace(finds=[]))
    fake._settle = lambda p, make: Search._settle(fake, p, make)  # type: ignore[arg-type]
    plan = Plan(0, "next_pick", None, shape, 0.5, "1-10 GFLOP|hopper", parents=[object()])
    Search._make_structural(fake, plan, set(), set(), 132)  # type: ignore[arg-type]
    assert plan.candidate is made and plan.operator == "mutate_one" and plan.declined == ["next_pick"]
    fake.operators["mutate_one"] = empty  # nothing anywhere (the repair operator is not a stand-in)
    plan = Plan(0, "next_pick", None, shape, 0.5, "1-10 GFLOP|hopper", parents=[object()])
    Search._make_structural(fake, plan, set(), set(), 132)  # type: ignore[arg-type]
    assert plan.candidate is None and plan.failure_kind == "no_child" and plan.declined == ["next_pick", "mutate_one"]
    cfg = MutatorConfig()
    assert reward_without_child("", cfg) == reward_without_child("operator", cfg) == cfg.penalty_compile_error
    assert reward_without_child("unsupported", cfg) == -0.5 and reward_without_child("unavailable", cfg) is None


def test_an_operator_whose_child_is_a_duplicate_hands_its_plan_to_another_and_is_charged():
    """A third of an H200 search's plan slots made duplicates of measured kernels (crossover: 126 of
    142 uses): each was a child the generation never had. The plan goes to another operator; the one
    that repeated a kernel is still charged a duplicate's penalty."""
    from types import SimpleNamespace

    from evo.search.loop import Search
    from evo.search.state import Plan
    shape = Shape(77, 4096, 4096)
    old, new = SimpleNamespace(id="k-old"), SimpleNamespace(id="k-new")
    def op(child):
        return SimpleNamespace(applies=lambda parents, info=None: True, apply=lambda *a, **k: child)
    fake = SimpleNamespace(operators={"crossover": op(old), "mutate_one": op(new), "next_pick": op(None)},
                           policy=OperatorPolicy(["crossover", "mutate_one", "next_pick"]), rng=random.Random(0),
                           predict=None, _info=lambda parents, shape: {}, state=SimpleNamespace(finds=[]))
    fake._settle = lambda p, make: Search._settle(fake, p, make)  # type: ignore[arg-type]
    made = {("k-old", shape)}
    plan = Plan(0, "crossover", None, shape, 0.5, "ctx", parents=[object()])
    Search._make_structural(fake, plan, set(), made, 132)  # type: ignore[arg-type]
    assert plan.candidate is new and plan.operator == "mutate_one" and plan.repeated == ["crossover"]
    made.add(("k-new", shape))  # now both are known, and next_pick has nothing: the last duplicate stays
    for _ in range(5):
        plan = Plan(0, "crossover", None, shape, 0.5, "ctx", parents=[object()])
        Search._make_structural(fake, plan, set(), made, 132)  # type: ignore[arg-type]
        assert plan.candidate in (old, new) and plan.failure_kind == "" and plan.operator not in plan.repeated
        assert sorted(plan.repeated + [plan.operator]) == ["crossover", "mutate_one"]
    other = Plan(0, "crossover", None, Shape(1, 4096, 4096), 0.5, "ctx", parents=[object()])
    Search._make_structural(fake, other, set(), made, 132)  # type: ignore[arg-type]
    assert other.candidate is old and other.repeated == []  # a kernel known on another shape is no duplicate


def test_a_feature_the_prior_never_saw_is_still_shrunk_towards_it():
    """A feature constant in the prior's data (sd 0, weight 0: the shipped prior saw no compile
    options) is pulled towards the prior like the others: one measurement with it does not set its
    weight outright, and nothing divides by its ~0 sd."""
    import numpy as np

    from evo.search.cost_model import CostModel, Prior
    prior = Prior("test", np.array([0.0, 0.0]), np.array([1.0, 1e-9]), np.array([1.0, 0.0, 0.0]), 100)
    model = CostModel(prior=prior)
    model.add("seen", [1.0, 0.0], 1.0)
    model.add("new", [0.0, 1.0], -0.5)  # the prior predicts 0 for it: 0.5 faster than that
    effect = model.predict([[0.0, 1.0]])[0]
    assert np.isfinite(model._w).all() and -0.25 < effect < 0.0  # unshrunk it was -0.5


def test_cost_prior_on_without_a_usable_prior_says_how_to_get_one(tmp_path, monkeypatch, compile_cache):
    from evo.core.errors import ConfigError
    from evo.search import cost_prior
    monkeypatch.setattr(cost_prior, "load", lambda: None)  # as when missing or fit to other features
    c, raw = compose(["evaluator=simulated", "shapes=inline", "shapes.list=[77x4096x4096]", "llm=none",
                      "search.progress=false", "search.max_evaluations=4", "search.cost_prior=on",
                      f"archive.path={tmp_path / 'a.sqlite'}"])
    with pytest.raises(ConfigError, match="rebuild it with `python -m evo.search.cost_prior"):
        run_search(c, raw)


def test_a_shortlist_takes_the_cuda_core_family_only_where_nothing_else_runs():
    """simt was never a shape's best in the H200 shortlist sweeps: its slot goes to the next
    tensor-core pick, and every pick the shortlist had besides it stays."""
    from evo.search import sweep
    every = sorted(FAMILIES)

    def picks(shape, families=every):
        return sweep.plan(families, shape, budget=12, sample="shortlist", rng=random.Random(0), num_sms=132)

    for shape in (Shape(513, 2304, 2048), Shape(77, 4096, 4096), Shape(1, 4096, 14336)):
        now = picks(shape)
        assert len(now) == 12 and all(c.family != "simt" for c in now)
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(sweep, "FALLBACK_ONLY", frozenset())
            before = picks(shape)
        assert any(c.family == "simt" for c in before)
        assert {c.id for c in before if c.family != "simt"} < {c.id for c in now}
    assert [c.family for c in picks(Shape(5, 7, 13))] == ["simt"]  # unaligned: only simt runs it
    assert picks(Shape(513, 2304, 2048), ["simt"])  # asked for alone, it is sampled


def test_a_shortlist_takes_ampere_above_m_64_only_where_k_is_short():
    """ampere won grid125 shapes with M > 64 only at K = 64 and lost every mid-M llm_layers shape:
    above M = 64 its slot goes to hopper's next pick unless K is short; below, it keeps its slot."""
    from evo.search import sweep

    def families(shape):
        return [c.family for c in sweep.plan(sorted(FAMILIES), shape, budget=12, sample="shortlist",
                                             rng=random.Random(0), num_sms=132)]

    assert families(Shape(513, 2304, 2048)) == ["hopper"] * 12
    assert "ampere" in families(Shape(1024, 64, 64)) and "ampere" in families(Shape(16, 2816, 2048))
    assert families(Shape(5, 7, 13)) == ["simt"]  # unaligned: neither tensor-core family runs it


def test_the_cost_model_and_the_test_double_see_a_tail_split_as_the_kernel_runs_it():
    """512x10240 in 128x256 tiles is 160 tiles: two rounds on 132 SMs whole, 1 + 1/4 with the last
    round's 28 tiles split 4 ways. The features and the modelled time follow the kernel's rounds."""
    from evo.evaluation.simulated import model_time_ms
    from evo.search.cost_model import features
    fam, shape = FAMILIES["hopper"], Shape(512, 10240, 8192)
    whole = fam.candidate(dict(fam.default, STAGES=4))
    tail = fam.candidate(dict(fam.default, STAGES=4, TAIL_SPLIT=16))
    assert features(whole, shape) != features(tail, shape)
    assert model_time_ms(tail.source, shape) < 0.9 * model_time_ms(whole.source, shape)
    small = Shape(4096, 8448, 4096)  # 8448 = 33 x 256: 264 tiles, two whole rounds: nothing to split
    assert features(whole, small) == features(tail, small)


def test_kernels_archived_before_a_gene_existed_are_the_same_configuration_to_the_operators():
    """An archived hopper kernel has no TAIL_SPLIT: it is the TAIL_SPLIT=1 configuration when the
    search marks configurations tried and when revert_gene compares a failed child with it."""
    from evo.mutators.structural import _differences, config_key
    fam = FAMILIES["hopper"]
    old = {k: v for k, v in fam.default.items() if k != "TAIL_SPLIT"}
    parent = Candidate.make(fam.render(old), family="hopper", params=old)  # as an archive holds it
    assert config_key("hopper", old) == config_key("hopper", fam.default)
    child = fam.candidate(dict(fam.default, STAGES=2))
    assert _differences(child, parent) == ["STAGES"]
    for seed in range(20):  # revert_gene reverts STAGES and never asks the old parent for TAIL_SPLIT
        assert OPERATORS["revert_gene"].apply([child, parent], random.Random(seed)).params["STAGES"] == fam.default["STAGES"]


def test_the_search_seeds_ampere_above_m_64_only_where_k_is_short():
    """As a shortlist does (sweep.ONLY_WHERE): on 333x4096x14336 the seeds are hopper's, on 1024x64x64
    ampere's picks are seeded too; an island of the ampere family seeds ampere everywhere."""
    from evo.search.sweep import sampled_families
    assert sampled_families(["hopper", "ampere"], Shape(333, 4096, 14336)) == ["hopper"]
    assert sampled_families(["hopper", "ampere"], Shape(1024, 64, 64)) == ["hopper", "ampere"]
    assert sampled_families(["ampere"], Shape(333, 4096, 14336)) == ["ampere"]


def test_a_find_is_a_change_another_kernel_of_the_family_can_take():
    """The thirteenth session's H200 find: the shortlist's split-K pick of 197x768x3072 with 7
    pipeline stages instead of 5 and a compile option, 8.8% faster. replay_change applies that change
    to another hopper kernel; a kernel of another family does not take it."""
    from evo.core.compile_options import options_of, with_options
    from evo.families import FAMILIES
    from evo.mutators.structural import OPERATORS, gene_change, remember
    hopper = FAMILIES["hopper"]
    pick = dict(hopper.default, BM=72, BN=64, CONSUMERS=1, SPLIT_K=3, FIXUP=1, STAGES=5, SWAP_AB=1, PERSISTENT=1)
    assert hopper.valid(pick)
    parent = hopper.candidate(pick)
    deeper = hopper.candidate(dict(pick, STAGES=7))
    child = type(deeper).make(with_options(deeper.source, {"expensive": "1"}), family="hopper", params=deeper.params)
    change = gene_change(parent, child)
    assert change == {"family": "hopper", "params": {"STAGES": 7}, "options": {"expensive": "1"}}
    assert gene_change(parent, FAMILIES["ampere"].candidate(FAMILIES["ampere"].default)) is None
    assert gene_change(parent, parent) is None
    finds = remember(remember([], change), change)
    assert finds == [change]
    other = hopper.candidate(dict(pick, BM=40, BN=128))  # another shape's split-K pick
    made = OPERATORS["replay_change"].apply([other], random.Random(0), finds=finds)
    assert made is not None and made.params["STAGES"] == 7 and made.params["BM"] == 40
    assert options_of(made.source) == {"expensive": "1"} and made.operator == "replay_change"
    assert OPERATORS["replay_change"].apply([made], random.Random(0), finds=finds) is None  # it has the change
    ampere = FAMILIES["ampere"].candidate(FAMILIES["ampere"].default)
    assert OPERATORS["replay_change"].apply([ampere], random.Random(0), finds=finds) is None


def test_a_register_cap_find_replaces_the_parents_own():
    """A find `minblocks 2 -> 3` applied to a kernel that already has minblocks=2 (a review found it
    refused: the two-argument __launch_bounds__ no longer looked settable)."""
    from evo.core.compile_options import can_set_minblocks, options_of, with_options
    from evo.core.kernel import Candidate
    from evo.families import FAMILIES
    from evo.mutators.structural import OPERATORS, gene_change
    fam = next(f for f in FAMILIES.values() if can_set_minblocks(f.candidate(f.default).source))
    base = fam.candidate(fam.default)

    def capped(c, n):
        return Candidate.make(with_options(c.source, {"minblocks": n}), family=c.family, params=c.params)
    change = gene_change(capped(base, "2"), capped(base, "3"))
    assert change == {"family": fam.name, "params": {}, "options": {"minblocks": "3"}}
    other = next(q for k, vals in fam.space.items() for v in vals
                 if (q := dict(fam.complete(fam.default), **{k: v})) != fam.complete(fam.default) and fam.valid(q))
    made = OPERATORS["replay_change"].apply([capped(fam.candidate(other), "2")], random.Random(0), finds=[change])
    assert made is not None and options_of(made.source) == {"minblocks": "3"} and made.params == fam.complete(other)


def test_an_archive_error_inside_an_operator_is_a_failed_use_and_is_said(caplog):
    """An LLM call's row the archive refused (a paid answer not recorded) was counted as a failed use
    of the operator and nothing was said."""
    import logging

    from evo.core.errors import ArchiveError
    from evo.search.loop import Search
    from evo.search.state import Plan

    def refused():
        raise ArchiveError("Error binding parameter 4: type 'dict' is not supported")

    plan = Plan(0, "llm:rewrite", None, Shape(77, 4096, 4096), 0.5, "ctx")
    with caplog.at_level(logging.WARNING, logger="evo.search.loop"):
        Search._settle(None, plan, refused)  # type: ignore[arg-type]
    assert plan.candidate is None and plan.failure_kind == "operator" and "binding" in plan.failure
    assert "the archive refused a write" in caplog.text
