"""What to install for an optional part of evo, said so that a user can do it.

evo-hgemm is not on PyPI, so `pip install 'evo-hgemm[report]'` would fetch nothing (or someone else's
package): the hint names the extra's own requirements, read from the installed distribution's metadata
(the same list for a wheel and an editable install), and the checkout's form beside them.
"""
from __future__ import annotations

import importlib.metadata
import re

DISTRIBUTION = "evo-hgemm"


def extra_requirements(extra: str) -> list[str]:
    """The requirements of evo's `extra` as pip takes them ('matplotlib>=3.8', ...), [] where the
    metadata cannot be read (evo run from a bare source tree)."""
    try:
        requires = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    marker = re.compile(r";\s*extra\s*==\s*['\"]" + re.escape(extra) + r"['\"]\s*$")
    return [marker.sub("", r).strip() for r in requires if marker.search(r)]


def install_hint(extra: str) -> str:
    """'pip install 'matplotlib>=3.8' ... (evo's `report` extra; in evo's checkout: pip install -e '.[report]')'."""
    packages = " ".join(f"'{r}'" for r in extra_requirements(extra))
    checkout = f"in evo's checkout: pip install -e '.[{extra}]'"
    return f"pip install {packages} (evo's `{extra}` extra; {checkout})" if packages else checkout
