"""Races between LLM answers arriving on their own threads and the search/evaluator (found in review):
an unsupported LLM child must never be evaluated whenever its answer arrives; a pending LLM call must
not hold back finished GPU results; screening must not send more children than the budget left."""
import concurrent.futures as cf
import random
import threading
import time
from types import SimpleNamespace

import pytest

from evo.archive import Archive
from evo.cli.hydra_app import compose
from evo.config import EvaluatorConfig
from evo.core.shapes import Shape
from evo.evaluation.evaluator import Evaluator
from evo.families import FAMILIES
from evo.search import loop
from evo.search.state import Plan, SearchState
from tests.fake_anthropic import FakeAnthropic, message
from tests.llm_helpers import edit, search_overrides

REQ = "// @evo requires = K % 8 == 0 and N % 8 == 0"


def answer(req, n):
    # every child excludes both shapes of the run: M == 1 only
    return 200, message(edit(REQ, "// @evo requires = M == 1 and K % 8 == 0 and N % 8 == 0")), 0


@pytest.mark.parametrize("when", ["before_drop", "during_screen"])
def test_an_unsupported_llm_child_is_never_evaluated_whenever_it_arrives(monkeypatch, tmp_path, when):
    from evo.search import run_search
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    futures = []
    make = loop.Search._make_children
    screen = loop.Search._screen

    def make_children(self, plans):
        fs = make(self, plans)
        futures[:] = fs
        if when == "before_drop":
            cf.wait(fs)
        return fs

    def screen_(self, plans):
        if when == "during_screen":
            cf.wait(futures)  # the answers arrive while the cost model screens (or any time before pairs are built)
        return screen(self, plans)

    monkeypatch.setattr(loop.Search, "_make_children", make_children)
    monkeypatch.setattr(loop.Search, "_screen", screen_)
    path = tmp_path / "u.sqlite"
    with FakeAnthropic(answer) as server:
        c, raw = compose(search_overrides(server, path, "llm.prompts=[deepen_pipeline]", "mutator.structural=[]",
                                          "search.children_per_island=2", "llm.preflight=false",
                                          "search.max_evaluations=10", "islands.specialize=none"))
        run_search(c, raw)
    a = Archive.open(path, readonly=True)
    rows = list(a.db.query("select generation, status from evaluations where generation >= 1"))
    assert rows == [], f"{when}: unsupported LLM children were evaluated: {rows}"


SLOW_S = 3.0


def test_a_pending_llm_call_does_not_hold_back_finished_gpu_results(compile_cache):
    cfg = EvaluatorConfig(backend="simulated", timeout_s=30, cache_dir=str(compile_cache), gpus=[0, 1])
    ev = Evaluator(cfg).start()
    try:
        cands = [FAMILIES["simt"].candidate(p) for p in FAMILIES["simt"].all_valid[:4]]
        for c in cands:
            ev.prepare(c).result()  # all compiled: every pair is ready at once
        pairs = [(c, Shape(128, 128, 128)) for c in cands]
        slow: cf.Future = cf.Future()
        threading.Timer(SLOW_S, slow.set_result, args=[[]]).start()  # an LLM answer without a child, after SLOW_S
        t0 = time.monotonic()
        times = [round(time.monotonic() - t0, 2) for _ in ev.evaluate(pairs, later=[slow], admit=lambda r: r)]
        assert max(times) < SLOW_S / 2, f"ready results held back by the pending call: {times}"
    finally:
        ev.close()


def test_screening_sends_no_more_children_than_the_budget_left():
    s = loop.Search.__new__(loop.Search)
    shape = Shape(1024, 1024, 1024)
    s.c = SimpleNamespace(search=SimpleNamespace(max_evaluations=10, children_per_island=6, repair_share=0.25,
                                                 screen_factor=3, screen_explore=0.25))
    s.state = SearchState(spent=4)  # 6 evaluations left
    s.islands = [SimpleNamespace(members=[1])]
    s.allocator = SimpleNamespace(settle=lambda: None, floor_ms={shape: 1.0})
    s.cost = SimpleNamespace(ready=True, predict=lambda xs: [0.0] * len(xs))
    s.known, s.best_on, s.rng = {}, {}, random.Random(0)
    s.ev = SimpleNamespace(num_sms=132)
    valid = FAMILIES["simt"].all_valid
    n = iter(range(1000))

    def plan(isl, structural_only=False):
        i = next(n)
        if i < 3 and not structural_only:  # the policy picked an LLM operator for 3 of the 6
            return Plan(0, "llm:deepen_pipeline", None, shape, 1.0, "c")
        return Plan(0, "mutate_one", FAMILIES["simt"].candidate(valid[i]), shape, 1.0, "c")
    s._plan = plan
    plans = s._screen(s._plans())
    new = sum(1 for p in plans if p.candidate) + sum(1 for p in plans if p.operator.startswith("llm:"))
    assert new <= 6
