"""A resumed run counts every cent and does not pay twice for the interrupted generation's answers."""
import pytest

from evo.archive import Archive
from evo.cli.hydra_app import compose
from tests.fake_anthropic import FakeAnthropic, message, prompt_of
from tests.llm_helpers import deepen, search_overrides


def test_a_resumed_run_uses_the_interrupted_generations_answers_again(monkeypatch, tmp_path):
    from evo.search import resume, run_search
    from evo.search.loop import Search
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    path = tmp_path / "r.sqlite"
    save = Search.save

    def interrupted(self):  # Ctrl-C once generation 2's calls are answered, before it is saved
        if self.state.generation == 3:
            raise KeyboardInterrupt
        save(self)

    def behaviour(req, n):
        prompt = prompt_of(req)
        return 200, message(deepen(prompt, str(n)) if "deepen" in prompt else "nothing to retile"), 0

    with FakeAnthropic(behaviour) as server:
        c, raw = compose(search_overrides(server, path, "llm.prompts=[deepen_pipeline,retile]", "llm.preflight=false",
                                          "mutator.structural=[]", "search.max_evaluations=16",
                                          "search.children_per_island=3"))
        monkeypatch.setattr(Search, "save", interrupted)
        with pytest.raises(KeyboardInterrupt):
            run_search(c, raw)
        monkeypatch.setattr(Search, "save", save)
        a = Archive.open(path, readonly=True)
        paid = list(a.db.query("select prompt_hash, occurrence, cost_usd from llm_calls where generation = 2"))
        a.close()
        assert paid
        asked = len(server.requests)
        resume(str(path))
        asked_after = len(server.requests) - asked
    a = Archive.open(path, readonly=True)
    assert a.db.execute("select count(*) from llm_calls where generation = 2").fetchone()[0] == len(paid)
    assert not list(a.db.query("select prompt_hash, occurrence from llm_calls group by prompt_hash, occurrence "
                               "having count(*) > 1"))  # nothing asked twice
    later = a.db.execute("select count(*) from llm_calls where generation > 2").fetchone()[0]
    assert later and asked_after == later  # every request after the resume is a later generation's
    children = {r["kernel_id"] for r in a.db.query("select kernel_id from llm_calls where generation = 2 and "
                                                    "kernel_id is not null")}
    evaluated = {r["kernel_id"] for r in a.db.query("select kernel_id from evaluations where generation = 2")}
    assert children <= evaluated  # the kept answers made their children again


@pytest.mark.parametrize("grace_s, kept", [(10.0, True), (0.0, False)])
def test_a_stopped_run_waits_for_the_answers_it_asked_for(monkeypatch, tmp_path, grace_s, kept):
    """Answers in flight at Ctrl-C were billed and lost (the call threads died with the process);
    with llm.stop_grace_s the run waits for them and records them for `evo resume`."""
    from evo.evaluation.evaluator import Evaluator
    from evo.search import run_search
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    path = tmp_path / "g.sqlite"
    evaluate = Evaluator.evaluate

    def stopped_while_asking(self, pairs, **kw):  # Ctrl-C while a generation's calls are out
        if kw.get("later"):
            raise KeyboardInterrupt
        return evaluate(self, pairs, **kw)

    # answers take 3 s: long enough that the run's unwinding (workers closed, archive closed) is over
    # before any arrives when nothing waits for them, short within the 10 s grace
    with FakeAnthropic(lambda req, n: (200, message(deepen(prompt_of(req), str(n))), 3.0)) as server:
        c, raw = compose(search_overrides(server, path, "llm.prompts=[deepen_pipeline]", "llm.preflight=false",
                                          "mutator.structural=[]", "search.max_evaluations=16",
                                          f"llm.stop_grace_s={grace_s}"))
        monkeypatch.setattr(Evaluator, "evaluate", stopped_while_asking)
        with pytest.raises(KeyboardInterrupt):
            run_search(c, raw)
        a = Archive.open(path, readonly=True)
        answered = a.db.execute("select count(*) from llm_calls where response is not null").fetchone()[0]
        a.close()
        asked = len(server.requests)
    assert asked > 0 and (answered == asked) == kept
