"""Static checks run on a candidate's source before it is compiled.

They keep untrusted code (LLM output) inside the kernel ABI: the entry point is present with the
ABI's parameters; only CUDA headers are included; nothing reaches files, processes, the network,
libraries (cuBLAS/cuDNN), streams, graphs or the console. Each rejection is a `Rejection` whose
reason is written for a repair prompt.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from evo.core.errors import DeclarationError
from evo.core.kernel import ENTRY_POINT, parse_declaration

ALLOWED_INCLUDES = frozenset({
    "cuda.h", "cuda_fp16.h", "cuda_bf16.h", "cuda_runtime.h", "cuda_fp8.h", "mma.h",
    "cuda_pipeline.h", "cuda_pipeline_primitives.h", "cuda_awbarrier.h",
    "cuda_awbarrier_primitives.h", "cuda/barrier", "cuda/pipeline", "cuda/ptx", "cuda/std/cstdint",
    "cooperative_groups.h", "cooperative_groups/memcpy_async.h", "cooperative_groups/reduce.h",
    "stdint.h", "cstdint", "stddef.h", "cstddef", "vector_types.h", "cudaTypedefs.h",
})
MAX_SOURCE_BYTES = 200_000

# (pattern, reason). Matched against the source with comments and string literals removed.
_FORBIDDEN: tuple[tuple[str, str], ...] = (
    (r"\b(?:printf|puts|fprintf|sprintf)\s*\(", "console output (printf) is not allowed in a candidate"),
    (r"\b(?:fopen|fread|fwrite|open|read|write|close|unlink|remove|rename|mkdir)\s*\(",
     "file access is not allowed in a candidate"),
    (r"\b(?:system|popen|fork|exec\w*|kill|dlopen|dlsym|socket|connect|bind|listen|getenv)\s*\(",
     "process, environment or network access is not allowed in a candidate"),
    (r"\b(?:cublas|cublasLt|cudnn|cutlass|cute)\w*", "library calls (cuBLAS, cuDNN, CUTLASS) are not allowed: write the kernel"),
    (r"\bcuda[A-Z]\w*\s*\(", "CUDA runtime API calls (streams, graphs, memory, launches) are not allowed in a candidate"),
    (r"\bcu[A-Z]\w*\s*\(", "CUDA driver API calls are not allowed in a candidate"),
    (r"<<<", "kernel launches from the candidate (dynamic parallelism) are not allowed"),
    (r"\b(?:malloc|free|new|delete)\b", "dynamic allocation is not allowed in a candidate"),
    (r"\bint\s+main\s*\(", "a candidate is a kernel, not a program: remove main()"),
    (r"\b__has_include(?:_next)?\b", "__has_include is not allowed in a candidate (it probes files)"),
    (r"\b__host__\b", "host code is not allowed in a candidate: mark helpers __device__"),
    (r"^\s*#\s*(?:pragma\s+comment|line|error|embed)\b", "this preprocessor directive is not allowed"),
    (r"^\s*#\s*(?:include|import)\s*(?![<\"\s])|^\s*#\s*(?:include|import)\s+(?![<\"])",
     "#include must name a header in <> or quotes, not a macro"),
    (r"\bextern\s*\"C\"\s*\{", "wrap nothing in extern \"C\" { }: declare only hgemm as extern \"C\""),
)
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f\ufeff\u2028\u2029]")
_INCLUDE = re.compile(r"^\s*#\s*(?:include|import)\s*([<\"])([^>\"]+)[>\"]", re.M)  # gcc reads #import too
_BOUNDS = r"(?:__launch_bounds__\s*\([^)]*\)\s*)?"
_ENTRY = re.compile(r"extern\s+\"C\"\s+__global__\s+" + _BOUNDS + r"void\s+" + _BOUNDS
                    + ENTRY_POINT + r"\s*\(([^)]*)\)")
# any definition of the entry point, however declared (to name a changed signature as such)
_ANY_ENTRY = re.compile(r"([^;{}]*?)\b" + ENTRY_POINT + r"\s*\(([^)]*)\)\s*\{")
_ABI_PARAMS = ["const half*", "const half*", "half*", "int", "int", "int"]
_TMA_PARAM = "const __grid_constant__ CUtensorMap"
_TYPE_WORDS = frozenset({"int", "half", "CUtensorMap", "unsigned"})


@dataclass(frozen=True)
class Rejection:
    rule: str
    reason: str
    line: int | None = None

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}" if self.line else self.reason


def strip_comments_and_strings(source: str) -> str:
    """Blank out comments and string/char literals, keeping line structure (for line numbers)."""
    out, i, n = [], 0, len(source)
    while i < n:
        two = source[i:i + 2]
        if two == "//":
            j = source.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif two == "/*":
            j = source.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("".join(c if c == "\n" else " " for c in source[i:j]))
            i = j
        elif source[i] in "\"'":
            quote, j = source[i], i + 1
            while j < n and source[j] != quote and source[j] != "\n":
                j += 2 if source[j] == "\\" else 1
            j = min(j + 1, n)
            # keep the quotes so `extern "C"` and includes remain recognisable
            body = source[i + 1:j - 1]
            keep = body if re.fullmatch(r"[\w./ ]*", body) else " " * len(body)
            out.append(quote + keep + quote)
            i = j
        else:
            out.append(source[i])
            i += 1
    return "".join(out)


def as_the_preprocessor_reads(source: str) -> str:
    """The source as the preprocessor sees its directives, line numbers kept: backslash-newline
    splices joined (gcc also joins a backslash followed by spaces; each joined line's newline moves
    after its logical line), comments and string literals blanked, and the digraph %: read as #.
    Without this, `%:include "/file"` or an `#include` split by a splice passed the checks and nvcc
    read the file (its text then reached repair prompts in the compile errors). Trigraphs are left as
    they are: candidates compile as C++17, which ignores them (reading `??/` as a backslash here would
    hide the line after it from the checks while the compiler reads it)."""
    out: list[str] = []
    pending, carried = "", 0
    for line in source.split("\n"):
        bare = line.rstrip(" \t\r\f\v")
        if bare.endswith("\\"):
            pending, carried = pending + bare[:-1], carried + 1
            continue
        out += [pending + line] + [""] * carried
        pending, carried = "", 0
    if carried:  # the file ends in a splice
        out += [pending] + [""] * (carried - 1)
    return strip_comments_and_strings("\n".join(out)).replace("%:", "#")


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _first_char(m: re.Match) -> int:
    """Where a match's text starts past leading whitespace (a `^\\s*` may begin on an earlier blank line)."""
    return m.start() + len(m.group(0)) - len(m.group(0).lstrip())


def _normalise_param(p: str) -> str:
    """'const half* __restrict__ A' -> 'const half*': qualifiers and names dropped, spacing fixed."""
    p = re.sub(r"\b__restrict__\b", "", p)
    words = re.sub(r"\s*\*\s*", "* ", p).split()
    if len(words) > 1 and re.fullmatch(r"[A-Za-z_]\w*", words[-1]) and words[-1] not in _TYPE_WORDS:
        words = words[:-1]
    return " ".join(words)


def check_source(source: str) -> list[Rejection]:
    """All reasons this source may not be compiled; empty if it passes."""
    if len(source.encode()) > MAX_SOURCE_BYTES:
        return [Rejection("size", f"source is larger than {MAX_SOURCE_BYTES} bytes")]
    plain = source.replace("\r\n", "\n")
    odd = _CONTROL.search(plain)
    if odd:  # a lone CR, a NUL or a BOM can hide a directive from the checks below while nvcc reads it
        return [Rejection("characters", f"the source holds a control or invisible character "
                                        f"({odd.group(0)!r}, line {_line_of(plain, odd.start())}): "
                                        f"write plain text (tabs and newlines only)")]
    rejections: list[Rejection] = []
    try:
        decl = parse_declaration(source)
    except DeclarationError as e:
        rejections.append(Rejection("declaration", f"launch declaration: {e}", e.line))
        decl = None
    code = as_the_preprocessor_reads(source)
    for m in _INCLUDE.finditer(code):
        header = m.group(2).strip()
        if header not in ALLOWED_INCLUDES:
            rejections.append(Rejection("include", f"#include <{header}> is not on the allow-list of CUDA headers",
                                        _line_of(code, _first_char(m))))
    for pattern, reason in _FORBIDDEN:
        found = re.search(pattern, code, re.M)
        if found:
            rejections.append(Rejection("forbidden", f"{reason} (found {found.group(0).strip()!r})",
                                        _line_of(code, _first_char(found))))
    entries = list(_ENTRY.finditer(code))
    other = _ANY_ENTRY.search(code) if not entries else None
    if other:  # defined, but not as the ABI says: a signature mismatch, not a missing entry point
        written = " ".join(f"{other.group(1).strip()} {ENTRY_POINT}({other.group(2).strip()})".split())
        rejections.append(Rejection("abi", f'signature mismatch: {ENTRY_POINT} must be declared extern "C" __global__ '
                                           f"void {ENTRY_POINT}(const half* A, const half* B, half* C, int M, int N, "
                                           f"int K); found {written!r}", _line_of(code, other.start(2))))
    elif not entries:
        rejections.append(Rejection("abi", 'the entry point is missing: define extern "C" __global__ void '
                                           "hgemm(const half* A, const half* B, half* C, int M, int N, int K)"))
    elif len(entries) > 1:
        rejections.append(Rejection("abi", "hgemm is defined more than once", _line_of(code, entries[1].start())))
    else:
        got = [_normalise_param(p) for p in entries[0].group(1).split(",")]
        n_tma = len(decl.tma) if decl else 0
        expected = [_normalise_param(p) for p in _ABI_PARAMS] + [_TMA_PARAM] * n_tma
        if got != expected:
            rejections.append(Rejection(
                "abi", "signature mismatch: hgemm's parameters must be "
                "(const half* A, const half* B, half* C, int M, int N, int K)"
                + (f" followed by {n_tma} 'const __grid_constant__ CUtensorMap' (one per declared tma)" if n_tma else "")
                + f"; found ({entries[0].group(1).strip()})", _line_of(code, entries[0].start())))
    return rejections
