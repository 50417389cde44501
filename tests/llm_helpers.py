"""Shared pieces of the LLM tests: operators and searches against the local fake Messages API."""
from __future__ import annotations

import functools
import re
from dataclasses import replace

from evo.archive import Archive
from evo.cli.hydra_app import compose
from evo.config import LLMConfig
from evo.core.shapes import Shape
from evo.families import FAMILIES
from evo.mutators.llm import build_llm_operators
from tests.fake_anthropic import source_in

PARENT = FAMILIES["ampere"].candidate(dict(FAMILIES["ampere"].default, STAGES=2))
SHAPE = Shape(1024, 1024, 1024)


def edit(search: str, replace: str) -> str:
    return f"Here is the change.\n<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE\n"


def deepen(prompt: str, note: str = "") -> str:
    """A real edit: one more pipeline stage, with the shared-memory declaration kept consistent
    (`note` goes into a comment, to make otherwise equal children differ)."""
    src = source_in(prompt)
    found = re.search(r"#define STAGES (\d+)", src)
    if not found:
        return "This kernel has no multi-stage pipeline to deepen."
    stages = int(found.group(1))
    smem = int(re.search(r"// @evo smem     = (\d+)", src).group(1))
    new = stages + 1
    if smem // stages * new > 232448:
        return "No room in shared memory for another stage."
    return (edit(f"#define STAGES {stages}", f"#define STAGES {new}" + (f" // {note}" if note else ""))
            + edit(f"// @evo smem     = {smem}", f"// @evo smem     = {smem // stages * new}"))


@functools.cache
def _anthropic() -> LLMConfig:
    return compose(["llm=anthropic"])[0].llm


def llm_config(**cfg) -> LLMConfig:
    """llm=anthropic as composed from conf/ (with its price table), with these settings."""
    return replace(_anthropic(), **cfg)


def operators(server, archive, run, preflight=False, **cfg):
    c = llm_config(base_url=server.url, max_retries=cfg.pop("max_retries", 2), timeout_s=cfg.pop("timeout_s", 10),
                   prompts=cfg.pop("prompts", ["deepen_pipeline"]), **cfg)
    return build_llm_operators(c, archive=archive, run_id=run, preflight=preflight)


def calls(archive: Archive) -> list[dict]:
    return list(archive.db.query("select * from llm_calls order by id"))


def search_overrides(server, path, *extra: str) -> list[str]:
    """A small simulated search with LLM operators answered by `server`."""
    return ["evaluator=simulated", "shapes=inline", "shapes.list=[1024x1024x1024,512x2048x1024]", "llm=anthropic",
            f"llm.base_url={server.url}", "llm.max_retries=0", "islands.n=1", "islands.population=4",
            "islands.specialize=none", "search.progress=false", f"archive.path={path}", *extra]
