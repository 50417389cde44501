"""Prompt templates: one Markdown file per operator under mutators/prompts/.

Each file starts with a small header (`name:`, `arity:`, `applies_to:` ok | failed | any) between
`---` lines; the body is the instruction, with {placeholders} filled from the context.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

from evo.core.errors import ConfigError

_HEADER = re.compile(r"^---\n(.*?)\n---\n(.*)$", re.S)


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    arity: int
    applies_to: str  # ok | failed | any: the parent's outcome at the target shape
    description: str
    body: str

    def render(self, **context) -> str:
        try:
            return self.body.format(**context)
        except KeyError as e:
            raise ConfigError(f"prompt template {self.name} uses an unknown placeholder {e}") from None


def parse_template(text: str, origin: str) -> PromptTemplate:
    m = _HEADER.match(text)
    if not m:
        raise ConfigError(f"{origin}: a prompt template starts with a '---' header (name, arity, applies_to)")
    fields = dict(line.split(":", 1) for line in m.group(1).splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    try:
        return PromptTemplate(fields["name"], int(fields.get("arity", 1)), fields.get("applies_to", "ok"),
                              fields.get("description", ""), m.group(2).strip())
    except KeyError as e:
        raise ConfigError(f"{origin}: the header lacks {e}") from None


def load_templates(names: list[str] | None = None) -> list[PromptTemplate]:
    folder = resources.files("evo.mutators").joinpath("prompts")
    found = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".md") and not entry.name.startswith("_"):  # _system.md is not an operator
            t = parse_template(entry.read_text(), f"mutators/prompts/{entry.name}")
            found[t.name] = t
    if names:
        unknown = [n for n in names if n not in found]
        if unknown:
            raise ConfigError(f"llm.prompts: no template named {', '.join(unknown)} (have: {', '.join(sorted(found))})")
        return [found[n] for n in names]
    return list(found.values())
