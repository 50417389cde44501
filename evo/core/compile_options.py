"""Per-candidate compile options: a whitelist of nvcc/ptxas levers written into the source.

A candidate carries its options as one comment line,

    // evo-nvcc: maxrregcount=128 dlcm=cg

so they are part of its source, hence of its id and of the compile cache key: two candidates that
differ only in options are two kernels. Only the names and values below exist; the compiler turns
them into flags (a line with anything else is a compile error that says what is allowed), so no
arbitrary flag ever reaches nvcc. `minblocks` is not a flag: it is the second argument of the
entry point's `__launch_bounds__`, written into the source by `with_options`.
"""
from __future__ import annotations

import re

#: option -> allowed values -> the nvcc arguments it adds
OPTIONS: dict[str, dict[str, tuple[str, ...]]] = {
    # a register cap: fewer registers, more resident warps (at the risk of spills)
    "maxrregcount": {str(n): (f"-maxrregcount={n}",) for n in (64, 96, 128, 168, 200, 255)},
    # global loads cached in L1 and L2 (ca) or in L2 only (cg)
    "dlcm": {v: ("-Xptxas", f"-dlcm={v}") for v in ("ca", "cg")},
    "expensive": {"1": ("-Xptxas", "--allow-expensive-optimizations=true")},
    "vectorize": {"1": ("--extra-device-vectorization",)},
    # min resident blocks per SM in __launch_bounds__ (a register budget the compiler must meet)
    "minblocks": {str(n): () for n in (1, 2, 3, 4)},
}
_LINE = re.compile(r"^// evo-nvcc:(.*)$", re.M)
_BOUNDS_ONE = re.compile(r"(__launch_bounds__\s*\(\s*[\w$]+)\s*\)")


class OptionError(ValueError):
    pass


def options_of(source: str) -> dict[str, str]:
    """The options a source declares ({} without the line); OptionError for one not on the whitelist."""
    m = _LINE.search(source)
    if not m:
        return {}
    out = {}
    for token in m.group(1).split():
        name, _, value = token.partition("=")
        if name not in OPTIONS or value not in OPTIONS[name]:
            allowed = "; ".join(f"{k}={'|'.join(v)}" for k, v in OPTIONS.items())
            raise OptionError(f"compile option {token!r} is not allowed (allowed: {allowed})")
        out[name] = value
    return out


def options_or_none(source: str) -> dict[str, str]:
    """options_of, with {} for a line off the whitelist (such a source fails to compile anyway)."""
    try:
        return options_of(source)
    except OptionError:
        return {}


def nvcc_flags(source: str) -> tuple[str, ...]:
    """The extra nvcc arguments of a source's options (OptionError for a bad line)."""
    return tuple(arg for name, value in sorted(options_of(source).items()) for arg in OPTIONS[name][value])


def with_options(source: str, options: dict[str, str]) -> str:
    """The source with exactly these options (the line replaced, or added at the top; `minblocks`
    written into a one-argument `__launch_bounds__`)."""
    old = options_of(source)
    body = _LINE.sub("", source, count=1).removeprefix("\n") if _LINE.search(source) else source
    if "minblocks" in old:  # back to the one-argument form first
        body = re.sub(rf"(__launch_bounds__\s*\(\s*[\w$]+)\s*,\s*{old['minblocks']}\s*\)", r"\1)", body, count=1)
    if "minblocks" in options:
        body = _BOUNDS_ONE.sub(rf"\1, {options['minblocks']})", body, count=1)
    if not options:
        return body
    line = "// evo-nvcc: " + " ".join(f"{k}={v}" for k, v in sorted(options.items()))
    return f"{line}\n{body}"


def can_set_minblocks(source: str) -> bool:
    """Only a one-argument `__launch_bounds__` takes a min-blocks value (two-argument ones own theirs)."""
    return bool(_BOUNDS_ONE.search(source))
