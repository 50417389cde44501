"""LLM calls overlap GPU evaluation: a child is evaluated as soon as its answer is in, and a slow call
delays only its own child (LLM calls and evaluations used to alternate strictly)."""
import threading

from evo.archive import Archive
from evo.cli.hydra_app import compose
from tests.fake_anthropic import FakeAnthropic, message, prompt_of, source_in
from tests.llm_helpers import edit, search_overrides

CHILDREN = 4


def tagged(prompt: str, n: int) -> str:
    """An edit that applies to any parent: a comment after its first line (so every child differs)."""
    first = source_in(prompt).splitlines()[0]
    return edit(first, f"{first}\n// answer {n}")


def test_a_slow_call_delays_only_its_own_child(monkeypatch, tmp_path):
    from evo.search import run_search
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    path = tmp_path / "o.sqlite"
    others_done = threading.Event()

    def evaluated_children() -> int:
        a = Archive.open(path, readonly=True)
        try:
            return a.db.execute("select count(*) from evaluations where generation = 1").fetchone()[0]
        finally:
            a.close()

    def behaviour(req, n):
        if n == 1:  # the first call to arrive answers only once every other child has been evaluated
            for _ in range(1200):
                if evaluated_children() >= CHILDREN - 1:
                    others_done.set()
                    break
                others_done.wait(0.05)
        return 200, message(tagged(prompt_of(req), n)), 0

    with FakeAnthropic(behaviour) as server:
        c, raw = compose(search_overrides(server, path, "llm.prompts=[deepen_pipeline]", "mutator.structural=[]",
                                          f"search.children_per_island={CHILDREN}", "llm.preflight=false",
                                          f"search.max_evaluations={4 + CHILDREN}", f"llm.concurrency={CHILDREN}"))
        run_search(c, raw)
    assert others_done.is_set()  # the other children were evaluated while the slow call was out
    a = Archive.open(path, readonly=True)
    slow = next(a.db.query("select kernel_id from llm_calls where response like '%// answer 1%'"))["kernel_id"]
    order = [r["kernel_id"] for r in a.db.query("select kernel_id from evaluations where generation = 1 order by id")]
    assert len(order) == CHILDREN and order[-1] == slow
