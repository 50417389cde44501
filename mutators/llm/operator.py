"""An LLM operator: render its prompt, ask the model, apply the edits, record everything."""
from __future__ import annotations

import logging
import random
from importlib import resources

from evo.archive import queries
from evo.archive.records import library_times
from evo.core.errors import EvoError
from evo.core.kernel import Candidate
from evo.core.shapes import Shape
from evo.mutators.llm.client import LLMCallError, prompt_hash
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


class OperatorFailure(EvoError):
    """An LLM operator use produced no candidate. `kind`: "unavailable" (the API could not answer:
    no penalty), "refused" (the API refuses every call: the LLM operators stop), "no_edit" (the
    answer held no usable edit: the operator's fault), "budget"."""

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

    def render(self, parents: list[Candidate], shape: Shape, info: dict) -> str:
        describe = [_describe(self.recorder.archive, p.id, shape, info.get(p.id)) for p in parents]
        context = {"M": shape.M, "N": shape.N, "K": shape.K, "shape": str(shape),
                   "parent_source": parents[0].source, "parent_measurements": describe[0],
                   "other_source": parents[1].source if len(parents) > 1 else "",
                   "other_measurements": describe[1] if len(parents) > 1 else "",
                   "error": getattr(info.get(parents[0].id), "error", "") or "",
                   "edit_rules": EDIT_RULES[self.edit_format]}
        return f"Operator: {self.template.name}\n\n" + self.template.render(**context)

    def apply(self, parents: list[Candidate], rng: random.Random, *, shape: Shape, info: dict) -> Candidate:
        if self.recorder.exhausted():
            raise OperatorFailure(f"the LLM budget of ${self.recorder.budget_usd:g} is spent", "budget")
        if getattr(self.client, "refused", None):
            raise OperatorFailure(f"the API refuses calls: {self.client.refused}", "refused")
        system = system_prompt()
        prompt = self.render(parents, shape, info)
        model = self.client.cfg.model
        row = {"operator": self.name, "model": model, "prompt_hash": prompt_hash(model, system, prompt),
               "system": system, "prompt": prompt}
        try:
            reply = self.client.complete(system, prompt)
        except LLMCallError as e:
            self.recorder.record(**row, outcome="api_error", error=str(e))
            if e.kind == "refused" and not getattr(self.client, "refused", None):
                self.client.refused = str(e)
                log.error(f"the Messages API refused a call ({e}): LLM operators are off for the rest of the run; "
                          f"check ANTHROPIC_API_KEY, llm.model and llm.* settings, then `evo resume`")
            raise OperatorFailure(str(e), e.kind) from None
        row.update(response=reply.text, model=reply.model, input_tokens=reply.input_tokens,
                   output_tokens=reply.output_tokens, cache_write_tokens=reply.cache_write_tokens,
                   cache_read_tokens=reply.cache_read_tokens, cost_usd=reply.cost_usd, latency_s=reply.latency_s,
                   replayed=int(reply.replayed))
        try:
            source = apply_answer(parents[0].source, reply.text, self.edit_format)
        except EditError as e:
            self.recorder.record(**row, outcome="no_edit", error=str(e))
            raise OperatorFailure(str(e)) from None
        child = Candidate.make(source, operator=self.name, parents=tuple(p.id for p in parents))
        self.recorder.record(**row, outcome="child", kernel_id=child.id)
        return child


def _describe(archive, kernel_id: str, shape: Shape, outcome) -> str:
    """What was measured on a kernel at the shape: times, libraries, roofline, resources, errors."""
    lines = []
    if archive is not None:
        ev = queries.latest_evaluation(archive, kernel_id, shape)
        if ev:
            lines.append(f"status: {ev['status']}" + (f" ({ev['error'][:600]})" if ev["error"] else ""))
            if ev["time_ms"]:
                lines.append(f"time: {ev['time_ms'] * 1e3:.2f} us ({ev['mode']} mode); best library "
                             f"{ev['best_library']}: {(ev['best_library_ms'] or 0) * 1e3:.2f} us; "
                             f"speedup {ev['speedup'] or 0:.3f}; roofline fraction {ev['roofline_fraction'] or 0:.3f}")
            libs = library_times(archive, ev["gpu"], shape, ev["mode"])
            if libs:
                lines.append("libraries: " + ", ".join(f"{lib} {ms * 1e3:.2f} us" for lib, ms in libs.items()))
        comp = queries.latest_compile(archive, kernel_id)
        if comp and comp["status"] == "ok":
            lines.append(f"resources: {comp['registers']} registers, {comp['smem_static']} B static smem, "
                         f"{comp['spill_stores']} B spill stores, {comp['stack']} B stack")
        elif comp:
            lines.append(f"compile {comp['status']}: {comp['log'][:1500]}")
    if not lines and outcome is not None:
        lines.append(f"status: {outcome.status}; speedup {outcome.speedup}")
    return "\n".join(lines) or "not measured yet"
