"""Parse a model's answer into a new source: SEARCH/REPLACE blocks (default) or a full rewrite."""
from __future__ import annotations

import re

from evo.core.errors import EvoError


class EditError(EvoError):
    """The answer holds no usable edit, or an edit does not apply to the parent."""


_BLOCK = re.compile(r"<{5,9} ?SEARCH\s*?\n(.*?)\n?={5,9}\s*?\n(.*?)\n?>{5,9} ?REPLACE", re.S)
_FENCE = re.compile(r"```(?:cuda|cpp|c\+\+|cu|c)?\s*\n(.*?)```", re.S)
MAX_ANSWER = 200_000


def parse_blocks(answer: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer(answer)]


def apply_blocks(source: str, blocks: list[tuple[str, str]]) -> str:
    if not blocks:
        raise EditError("the answer contains no SEARCH/REPLACE block")
    for i, (search, replace) in enumerate(blocks, start=1):
        if not search.strip():
            raise EditError(f"edit {i}: the SEARCH part is empty")
        count = source.count(search)
        if count == 1:
            source = source.replace(search, replace, 1)
            continue
        if count > 1:
            raise EditError(f"edit {i}: the SEARCH text occurs {count} times; include more context to make it unique")
        # tolerate differences in trailing whitespace, line by line
        pattern = r"\n".join(re.escape(ln.rstrip()) + r"[ \t]*" for ln in search.split("\n"))
        matches = list(re.finditer(pattern, source))
        if len(matches) != 1:
            first = search.strip().splitlines()[0][:80]
            raise EditError(f"edit {i}: the SEARCH text does not occur in the parent (first line: {first!r})")
        m = matches[0]
        source = source[:m.start()] + replace + source[m.end():]
    return source


def full_rewrite(answer: str) -> str:
    blocks = [b for b in _FENCE.findall(answer) if "hgemm" in b]
    if not blocks:
        raise EditError("the answer contains no ```cuda code block defining hgemm")
    return blocks[-1].strip() + "\n"


def apply_answer(source: str, answer: str, edit_format: str) -> str:
    if len(answer) > MAX_ANSWER:
        raise EditError(f"the answer is longer than {MAX_ANSWER} characters")
    if edit_format == "full":
        return full_rewrite(answer)
    blocks = parse_blocks(answer)
    if not blocks and "```" in answer and "hgemm(" in answer:
        return full_rewrite(answer)  # the model rewrote the file although asked for edits
    new = apply_blocks(source, blocks)
    if new == source:
        raise EditError("the edits leave the source unchanged")
    return new
