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
