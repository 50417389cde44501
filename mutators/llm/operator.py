"""An LLM operator: render its prompt, ask the model, apply the edits, record everything.

A use has two halves so that a search can overlap calls with GPU work and still decide the same
way every time: `request()` (on the search's thread, in plan order: renders the prompt from what
earlier generations left in the archive and numbers its occurrence) and `answer()` (on any thread:
the call, the edit, the record). `apply()` is both, for direct use.
"""
from __future__ import annotations

import logging
import random
import time
from dataclasses import replace
from importlib import resources

from evo.archive import queries
from evo.archive.llm_calls import recent_failures
from evo.archive.records import library_times
from evo.core.errors import EvoError
from evo.core.kernel import Candidate
from evo.core.shapes import Shape
from evo.mutators.llm.client import LLMCallError, Reply, Request
from evo.mutators.llm.edits import EditError, apply_answer
from evo.mutators.llm.prompts import PromptTemplate

log = logging.getLogger(__name__)

EDIT_RULES = {
    "search_replace": (
        "Answer with one or more edits of the parent source, each exactly in this form:\n"
        "<<<<<<< SEARCH\n(lines copied exactly from the parent)\n=======\n(the new lines)\n>>>>>>> REPLACE\n"
        "Each SEARCH part must match the parent exactly once. Keep the // @evo launch declaration consistent "
        "with the code (block size, shared memory bytes, grid, requires)."),
    "full": "Answer with the complete new source in one ```cuda code block.",
}
RECENT_FAILURES = 3  # earlier failed attempts on the parent shown in its prompts


class OperatorFailure(EvoError):
    """An LLM operator use produced no candidate. `kind`: "unavailable" (the API could not answer:
    no penalty), "refused" (the API refuses every call: the run stops), "no_edit" (the answer held
    no usable edit: the operator's fault), "truncated" (the answer hit llm.max_tokens: nothing of it
    is applied), "budget"."""

    def __init__(self, message: str, kind: str = "no_edit"):
        super().__init__(message)
        self.kind = kind


def system_prompt() -> str:
    return resources.files("evo.mutators").joinpath("prompts", "_system.md").read_text()


class LLMOperator:
    def __init__(self, template: PromptTemplate, client, recorder, *, edit_format: str = "search_replace"):
        self.template, self.client, self.recorder, self.edit_format = template, client, recorder, edit_format
        self.name = f"llm:{template.name}"
        self.arity = template.arity

    def applies(self, parents: list[Candidate], info: dict) -> bool:
        if self.recorder.exhausted() or getattr(self.client, "refused", None):
            return False
        outcome = info.get(parents[0].id)
        failed = outcome is not None and str(outcome.status) != "ok"
        return {"ok": not failed, "failed": failed, "any": True}[self.template.applies_to]

    def render(self, parents: list[Candidate], shape: Shape, info: dict, *,
               generation: int | None = None) -> tuple[str, str]:
        """(stable, variable): the parent's source, which every prompt about this parent starts with
        (cached after the system text), then this operator's instruction, what was measured, and
        what failed on the parent before this generation."""
        archive = self.recorder.archive
        describe = [_describe(archive, p.id, shape, info.get(p.id)) for p in parents]
        context = {"M": shape.M, "N": shape.N, "K": shape.K, "shape": str(shape),
                   "parent_measurements": describe[0],
                   "other_source": parents[1].source if len(parents) > 1 else "",
                   "other_measurements": describe[1] if len(parents) > 1 else "",
                   "error": getattr(info.get(parents[0].id), "error", "") or "",
                   "edit_rules": EDIT_RULES[self.edit_format]}
        stable = f"Parent kernel:\n```cuda\n{parents[0].source.rstrip()}\n```"
        variable = f"Operator: {self.template.name}\n\n" + self.template.render(**context)
        failures = _failures(archive, self.recorder.run_id, parents[0].id, generation)
        if failures:
            variable += "\n\nEarlier attempts on this parent that failed (do not repeat them):\n" + failures
        return stable, variable

    def request(self, parents: list[Candidate], shape: Shape, info: dict, *,
                generation: int | None = None) -> Request:
        stable, variable = self.render(parents, shape, info, generation=generation)
        req = Request(self.name, self.client.cfg.model, system_prompt(), stable, variable, parents[0].id)
        return replace(req, occurrence=self.recorder.next_occurrence(req.hash), generation=generation)

    def answer(self, req: Request, parents: list[Candidate]) -> Candidate:
        row = {"operator": self.name, "model": req.model, "prompt_hash": req.hash, "occurrence": req.occurrence,
               "parent_id": req.parent_id, "generation": req.generation, "system": req.system, "prompt": req.text}
        kept = self.recorder.kept_answer(req.hash, req.occurrence)
        estimate = getattr(self.client, "upper_estimate", None)
        token: list[int] = []  # the recorder's, once the call goes out (billed if a stop leaves it in flight)
        counted = [0.0]  # what the client's on_cost added to the spending already

        def on_send() -> None:  # a call still waiting for its slot when a stop gives up on it was never sent
            if estimate is not None:
                token.append(self.recorder.call_started(row, estimate(req)))

        def record(**columns) -> None:
            if kept is not None:
                return _recorded_already(**columns)
            if token and not self.recorder.call_ended(token[0]):  # the stop billed it already
                columns = dict(columns, cost_usd=None,
                               error=f"billed at the stop as a call in flight; {columns.get('error') or ''}")
            self.recorder.record(**columns, counted=counted[0])

        def on_cost(usd: float) -> None:
            counted[0] += self.recorder.count(usd)

        sent = time.monotonic()
        try:
            reply = (self.client.complete(req, on_cost=on_cost, on_send=on_send) if kept is None
                     else Reply.from_row(kept, req.model, replayed=False))
        except LLMCallError as e:  # its latency too: that the call's limit held can be read from the archive
            record(**row, outcome=e.kind, error=str(e), replayed=int(e.replayed), cost_usd=e.cost_usd or None,
                   latency_s=round(time.monotonic() - sent, 3))
            if e.kind == "refused" and not getattr(self.client, "refused", None):
                self.client.refused = str(e)
            raise OperatorFailure(str(e), e.kind) from None
        row.update(_reply_columns(reply))
        said = f"{reply.note}; " if reply.note else ""  # e.g. the cost is an estimate
        if reply.stop_reason == "max_tokens":  # a cut answer is never applied, not even its complete edits
            error = (f"the answer was cut at llm.max_tokens={getattr(self.client.cfg, 'max_tokens', '?')} "
                     f"({reply.output_tokens} output tokens): nothing of it is applied; raise llm.max_tokens")
            record(**row, outcome="truncated", error=said + error)
            raise OperatorFailure(error, "truncated")
        try:
            source = apply_answer(parents[0].source, reply.text, self.edit_format)
        except EditError as e:
            record(**row, outcome="no_edit", error=said + str(e))
            raise OperatorFailure(str(e)) from None
        child = Candidate.make(source, operator=self.name, parents=tuple(p.id for p in parents))
        record(**row, outcome="child", kernel_id=child.id, error=reply.note or None)
        return child

    def apply(self, parents: list[Candidate], rng: random.Random, *, shape: Shape, info: dict) -> Candidate:
        if self.recorder.exhausted():
            raise OperatorFailure(f"the LLM budget of ${self.recorder.budget_usd:g} is spent", "budget")
        if getattr(self.client, "refused", None):
            raise OperatorFailure(f"the API refuses calls: {self.client.refused}", "refused")
        return self.answer(self.request(parents, shape, info), parents)


def _recorded_already(**row) -> None:
    """An answer from before an interruption: its row (and its cost) is in the archive already."""


def _reply_columns(reply: Reply) -> dict:
    return {"response": reply.text, "model": reply.model, "stop_reason": reply.stop_reason,
            "input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens,
            "cache_write_tokens": reply.cache_write_tokens, "cache_read_tokens": reply.cache_read_tokens,
            "cost_usd": reply.cost_usd, "latency_s": reply.latency_s, "replayed": int(reply.replayed)}


def _failures(archive, run_id: int | None, parent_id: str, generation: int | None) -> str:
    if archive is None:
        return ""
    return "\n".join(f"- {f['operator'] or '?'}: {f['what']}" + (f": {f['error'][:400]}" if f["error"] else "")
                     for f in recent_failures(archive, run_id, parent_id, before_generation=generation,
                                              limit=RECENT_FAILURES))


def _describe(archive, kernel_id: str, shape: Shape, outcome) -> str:
    """What was measured on a kernel at the shape: times, libraries, roofline, resources, errors; when
    it was never measured at this shape, a note saying so and its times at other shapes."""
    lines = []
    ev = None
    if archive is not None:
        ev = queries.latest_evaluation(archive, kernel_id, shape)
        if ev:
            lines.append(f"status: {ev['status']}" + (f" ({ev['error'][:600]})" if ev["error"] else ""))
            if ev["time_ms"]:
                lines.append(f"time at {shape}: {ev['time_ms'] * 1e3:.2f} us ({ev['mode']} mode); best library "
                             f"{ev['best_library']}: {(ev['best_library_ms'] or 0) * 1e3:.2f} us; "
                             f"speedup {ev['speedup'] or 0:.3f}; roofline fraction {ev['roofline_fraction'] or 0:.3f}")
            libs = library_times(archive, ev["gpu"], shape, ev["mode"])
            if libs:
                lines.append("libraries: " + ", ".join(f"{lib} {ms * 1e3:.2f} us" for lib, ms in libs.items()))
        elif outcome is None:
            elsewhere = queries.measured_times(archive, kernel_id)
            lines.append(f"not measured on this shape ({shape}) yet"
                         + ("; measured at " + ", ".join(f"{s}: {ms * 1e3:.2f} us" for s, ms in
                                                        list(elsewhere.items())[:4]) if elsewhere else ""))
        comp = queries.latest_compile(archive, kernel_id)
        if comp and comp["status"] == "ok":
            lines.append(f"resources: {comp['registers']} registers, {comp['smem_static']} B static smem, "
                         f"{comp['spill_stores']} B spill stores, {comp['stack']} B stack")
        elif comp:
            lines.append(f"compile {comp['status']}: {comp['log'][:1500]}")
    if outcome is not None and not ev:
        lines.append(f"status: {outcome.status}; speedup {outcome.speedup}")
    return "\n".join(lines) or f"not measured on this shape ({shape}) yet"
