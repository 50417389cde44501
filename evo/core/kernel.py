"""The kernel model: a candidate is CUDA source text with an in-source launch declaration.

ABI (docs/kernel-abi.md): the source defines
    extern "C" __global__ void hgemm(const half* A, const half* B, half* C, int M, int N, int K)
optionally followed by one `const __grid_constant__ CUtensorMap` parameter per declared tensor map.

The launch declaration is a set of comment lines, each `// @evo key = value`:

    // @evo grid     = cdiv(N, 128), cdiv(M, 128), 1     grid as expressions of M, N, K, num_sms
    // @evo block    = 256                               threads per block (x[, y, z])
    // @evo smem     = 49152                             dynamic shared memory, bytes (default 0)
    // @evo cluster  = 2, 1, 1                           thread-block cluster (optional)
    // @evo requires = K % 8 == 0                        a supported-shape condition (repeatable)
    // @evo tma      = A box(64, 128) swizzle(128)       a TMA tensor map over A, B or C (repeatable)

Expressions are parsed by `evo.core.expr` (never `eval`). A tensor map over a row-major operand
X[rows, cols] has dimensions (cols, rows), innermost first; `box(inner, outer)` is its box in
elements and `swizzle` its shared-memory swizzle in bytes (0, 32, 64 or 128).
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache

from evo.core.errors import DeclarationError
from evo.core.expr import Expr, ExprError
from evo.core.shapes import Shape

ENTRY_POINT = "hgemm"
VARIABLES = frozenset({"M", "N", "K", "num_sms"})
MAX_THREADS = 1024
MAX_DYNAMIC_SMEM = 232448  # 227 KiB: the per-block opt-in limit on sm_90
MAX_CLUSTER = 16
_DECL = re.compile(r"^\s*//\s*@evo\s+(\w+)\s*=\s*(.*?)\s*$")
_TMA = re.compile(r"^([ABC])\s+box\s*\((.+?)\)\s*(?:swizzle\s*\(\s*(\d+)\s*\))?$")
_KEYS = ("grid", "block", "smem", "cluster", "requires", "tma")


@dataclass(frozen=True)
class TmaDecl:
    operand: str  # "A", "B" or "C"
    box: tuple[Expr, Expr]  # (inner, outer) in elements
    swizzle: int  # bytes: 0, 32, 64, 128


@dataclass(frozen=True)
class TensorMapSpec:
    """A concrete tensor map for one shape: what the host must build and pass."""
    operand: str
    dims: tuple[int, int]  # (inner, outer) elements
    box: tuple[int, int]
    swizzle: int

    def to_json(self) -> dict:
        return {"operand": self.operand, "dims": list(self.dims), "box": list(self.box),
                "swizzle": self.swizzle, "dtype": "float16", "layout": "row-major"}


@dataclass(frozen=True)
class Launch:
    """The concrete launch of a kernel for one shape."""
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem: int
    cluster: tuple[int, int, int] | None
    tensor_maps: tuple[TensorMapSpec, ...] = ()

    def to_json(self) -> dict:
        return {"grid": list(self.grid), "block": list(self.block), "smem": self.smem,
                "cluster": list(self.cluster) if self.cluster else None,
                "tensor_maps": [t.to_json() for t in self.tensor_maps]}


class LaunchError(ValueError):
    """The declaration evaluates to a launch that the hardware cannot run for this shape."""


@dataclass(frozen=True)
class LaunchDecl:
    grid: tuple[Expr, ...]
    block: tuple[Expr, ...]
    smem: Expr | None
    cluster: tuple[Expr, ...] | None
    requires: tuple[Expr, ...]
    tma: tuple[TmaDecl, ...]
    text: dict = field(default_factory=dict, compare=False)  # key -> raw text, for display

    def supports(self, shape: Shape, *, num_sms: int = 132) -> bool:
        env = _env(shape, num_sms)
        try:
            return all(bool(r.evaluate(env)) for r in self.requires)
        except ExprError:
            return False

    def launch_for(self, shape: Shape, *, num_sms: int = 132) -> Launch:
        env = _env(shape, num_sms)
        try:
            grid = _dims(self.grid, env, "grid")
            block = _dims(self.block, env, "block")
            smem = self.smem.evaluate(env) if self.smem else 0
            cluster = _dims(self.cluster, env, "cluster") if self.cluster else None
            maps = tuple(_tensor_map(t, shape, env) for t in self.tma)
        except ExprError as e:
            raise LaunchError(str(e)) from None
        threads = block[0] * block[1] * block[2]
        if threads > MAX_THREADS:
            raise LaunchError(f"block of {threads} threads exceeds {MAX_THREADS}")
        if not 0 <= smem <= MAX_DYNAMIC_SMEM:
            raise LaunchError(f"dynamic shared memory {smem} bytes is outside 0..{MAX_DYNAMIC_SMEM}")
        if grid[1] > 65535 or grid[2] > 65535 or grid[0] > 2**31 - 1:
            raise LaunchError(f"grid {grid} exceeds the hardware limits")
        if cluster:
            size = cluster[0] * cluster[1] * cluster[2]
            if size > MAX_CLUSTER:
                raise LaunchError(f"cluster of {size} blocks exceeds {MAX_CLUSTER}")
            if any(g % c for g, c in zip(grid, cluster)):
                raise LaunchError(f"grid {grid} is not a multiple of cluster {cluster}")
            if size == 1:
                cluster = None
        return Launch(grid, block, smem, cluster, maps)


def _env(shape: Shape, num_sms: int) -> dict[str, int]:
    return {"M": shape.M, "N": shape.N, "K": shape.K, "num_sms": num_sms}


def _dims(exprs: tuple[Expr, ...], env: dict, what: str) -> tuple[int, int, int]:
    values = [int(e.evaluate(env)) for e in exprs] + [1] * (3 - len(exprs))
    if any(v < 1 for v in values):
        raise LaunchError(f"{what} {tuple(values)} has a dimension below 1")
    return tuple(values)  # type: ignore[return-value]


def _tensor_map(t: TmaDecl, shape: Shape, env: dict) -> TensorMapSpec:
    rows, cols = {"A": (shape.M, shape.K), "B": (shape.K, shape.N), "C": (shape.M, shape.N)}[t.operand]
    box = (int(t.box[0].evaluate(env)), int(t.box[1].evaluate(env)))
    if not all(1 <= b <= 256 for b in box):
        raise LaunchError(f"tensor map box {box} of {t.operand} must be within 1..256")
    return TensorMapSpec(t.operand, (cols, rows), box, t.swizzle)


@lru_cache(maxsize=1024)  # a search asks for the same sources' declarations many times per generation
def parse_declaration(source: str) -> LaunchDecl:
    """Parse the `// @evo` lines of a source. Errors name the line. The result is shared between
    callers (cached): read it, never change it."""
    values: dict[str, list[tuple[int, str]]] = {k: [] for k in _KEYS}
    for number, line in enumerate(source.splitlines(), start=1):
        if "@evo" not in line:
            continue
        m = _DECL.match(line)
        if not m:
            raise DeclarationError("an @evo line must read '// @evo key = value'", number)
        key, value = m.group(1), m.group(2)
        if key not in values:
            raise DeclarationError(f"unknown key {key!r} (known: {', '.join(_KEYS)})", number)
        if key not in ("requires", "tma") and values[key]:
            raise DeclarationError(f"{key} is declared twice (first on line {values[key][0][0]})", number)
        values[key].append((number, value))
    for needed in ("grid", "block"):
        if not values[needed]:
            raise DeclarationError(f"the launch declaration has no '// @evo {needed} = ...' line")

    def exprs(key: str, lo: int, hi: int) -> tuple[Expr, ...] | None:
        if not values[key]:
            return None
        number, text = values[key][0]
        parts = _split_top(text)
        if not lo <= len(parts) <= hi:
            raise DeclarationError(f"{key} takes {lo} to {hi} comma-separated values, got {len(parts)}", number)
        return tuple(_expr(p, number) for p in parts)

    requires = tuple(_expr(text, number) for number, text in values["requires"])
    tma = tuple(_parse_tma(text, number) for number, text in values["tma"])
    smem = exprs("smem", 1, 1)
    grid, block = exprs("grid", 1, 3), exprs("block", 1, 3)
    assert grid is not None and block is not None  # both required, checked above
    return LaunchDecl(
        grid=grid, block=block, smem=smem[0] if smem else None,
        cluster=exprs("cluster", 1, 3), requires=requires, tma=tma,
        text={k: [t for _, t in v] for k, v in values.items() if v},
    )


def _expr(text: str, number: int) -> Expr:
    try:
        return Expr(text, names=VARIABLES)
    except ExprError as e:
        raise DeclarationError(str(e), number) from None


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        current += ch
    parts.append(current)
    return [p.strip() for p in parts]


def _parse_tma(text: str, number: int) -> TmaDecl:
    m = _TMA.match(text.strip())
    if not m:
        raise DeclarationError("tma must read 'A|B|C box(inner, outer) swizzle(0|32|64|128)'", number)
    box = _split_top(m.group(2))
    if len(box) != 2:
        raise DeclarationError("tma box takes two values: (inner, outer)", number)
    swizzle = int(m.group(3) or 0)
    if swizzle not in (0, 32, 64, 128):
        raise DeclarationError(f"tma swizzle must be 0, 32, 64 or 128 bytes, got {swizzle}", number)
    return TmaDecl(m.group(1), (_expr(box[0], number), _expr(box[1], number)), swizzle)


# comments and strings, read in one pass from the left as ptxas reads them (a `/*` inside a string opens no
# comment, a `;` inside a comment ends no statement)
_PTX_LEXEME = re.compile(r'"[^"\n]*"?|//[^\n]*|/\*.*?\*/', re.S)
_PLAIN_STRING = re.compile(r'"[A-Za-z0-9_ ]*"')  # as nvcc writes them: .pragma "nounroll"
_PTX_LABEL = re.compile(r"^([$%]?[A-Za-z_$][\w$]*):(?!:)\s*(.*)$", re.S)  # not `shared::cta`
_PTX_GUARD = re.compile(r"^@!?%\w+\s+")
_GRIDDEPCONTROL = re.compile(r"\bgriddepcontrol\b\s*(?:\.\s*(\w+))?")
# What may run before the wait, on any path: instructions on registers only (or computing addresses
# without using them), by the opcode's first part...
_REGISTERS_ONLY = frozenset(
    "add sub mul mad mul24 mad24 sad div rem abs neg min max fma copysign and or xor not cnot lop3 shl shr shf "
    "bfe bfi brev bfind clz popc prmt selp setp set slct testp cvt cvta mov isspacep mapa getctarank elect "
    "activemask vote".split())
# ... and, by the instruction's name, what touches no global memory: parameters, shared memory, barriers
# and fences, and fetching a tensor map (a descriptor the launch passes; fetching it reads no data).
_NO_GLOBAL_MEMORY = ("ld.param", "ld.shared", "st.shared", "mbarrier.init.shared", "fence.", "bar.", "barrier.",
                     "prefetch.tensormap", "prefetch.param.tensormap", "griddepcontrol.launch_dependents")


def _without_comments(ptx: str) -> str | None:
    """The PTX without its comments (inline asm can put any text into one, `.entry` included); None
    where a string holds more than plain words (`.pragma "/*"` would hide code from a reader that takes
    the string for the start of a comment, and `;` or `{` in one would split statements that are not)."""
    plain = True

    def drop(m: re.Match) -> str:
        nonlocal plain
        if m.group(0).startswith('"'):
            plain = plain and _PLAIN_STRING.fullmatch(m.group(0)) is not None
            return m.group(0)
        return " "
    text = _PTX_LEXEME.sub(drop, ptx)
    return text if plain else None


def _ptx_statements(body: str) -> list[str]:
    """An entry's body as statements and labels ("$L__BB0_2:"), without scoping braces and declarations."""
    out = []
    for part in re.split(r"[;{}]", body):
        part = part.strip()
        while (label := _PTX_LABEL.match(part)) and not part.startswith("@"):
            out.append(label.group(1) + ":")
            part = label.group(2).strip()
        if part and not part.startswith("."):
            out.append(" ".join(part.split()))
    return out


def _entry_body(ptx: str, entry: str) -> str | None:
    """The text between the braces of the one entry point named `entry`; None unless exactly one."""
    entries = list(re.finditer(r"^[ \t]*(?:\.visible[ \t]+|\.weak[ \t]+)?\.entry[ \t]+" + re.escape(entry)
                               + r"[ \t]*\(", ptx, re.M))
    start = ptx.find("{", entries[0].end()) if len(entries) == 1 else -1
    if start < 0:
        return None
    depth = 0
    for i in range(start, len(ptx)):
        depth += {"{": 1, "}": -1}.get(ptx[i], 0)
        if depth == 0:
            return ptx[start + 1:i]
    return None


def waits_first_in_ptx(ptx: str, entry: str = ENTRY_POINT) -> bool:
    """Whether the compiled entry point waits for the grid before it (`griddepcontrol.wait`) before it
    touches global memory, on every path: then it may be launched as a programmatic dependent launch
    (PDL), its launch and prologue overlapping the previous kernel's tail. Before the wait only
    register arithmetic, parameter and shared-memory accesses, shared-memory barrier set-up, barriers,
    fences and tensor-map prefetches may run, branches and loops included; any other instruction (a
    global or generic load or store, an atomic, a call, an indirect branch) reachable before a wait
    makes it False, and so does a kernel that never waits. Decided on the PTX nvcc makes of the source
    (the code the cubin is assembled from), not on the source text, which macros, comments and strings
    can make say something else; PTX with other than exactly one such entry point is False."""
    return pdl_verdicts_in_ptx(ptx, entry)[0]


def _waits_first(text: str, entry: str) -> bool:
    """waits_first_in_ptx on PTX already without its comments."""
    body = _entry_body(text, entry)
    if body is None:
        return False
    stmts = _ptx_statements(body)
    labels = {s[:-1]: i for i, s in enumerate(stmts) if s.endswith(":")}
    if len(labels) < sum(s.endswith(":") for s in stmts):  # a name defined twice (in two `{ }` scopes):
        return False  # which one a branch reaches is the scope's business; nvcc never repeats one
    seen: set[int] = set()
    todo, waited = [0], False
    while todo:  # every path from the entry, each followed up to its first unconditional wait
        i = todo.pop()
        if i in seen or i >= len(stmts):  # past the last statement: the kernel returns
            continue
        seen.add(i)
        guard = _PTX_GUARD.match(stmts[i])
        instr = stmts[i][guard.end():] if guard else stmts[i]
        op = instr.split()[0]
        if instr.endswith(":"):
            todo.append(i + 1)
        elif op == "griddepcontrol.wait" and not guard:
            waited = True
        elif op in ("bra", "bra.uni"):
            target = instr.split()[-1]
            if target not in labels:
                return False
            todo += [labels[target]] + ([i + 1] if guard else [])
        elif op in ("ret", "exit"):  # returns before touching anything
            todo += [i + 1] if guard else []
        elif op == "griddepcontrol.wait" or op.split(".")[0] in _REGISTERS_ONLY or op.startswith(_NO_GLOBAL_MEMORY):
            todo.append(i + 1)  # a guarded wait holds one path only: both go on
        else:
            return False
    return waited


def pdl_verdicts_in_ptx(ptx: str, entry: str = ENTRY_POINT) -> tuple[bool, bool]:
    """Two verdicts of one PTX text, read once: whether evo.dispatch may launch the kernel as a
    programmatic dependent (`waits_first_in_ptx`), and whether the evaluator may time it so: it waits
    first and never signals its own dependents early (`griddepcontrol.launch_dependents`). In graph
    replays the kernel after it is itself, so an early signal would start its own next replay sooner, a
    gain it does not get in a model, where the kernel before it is another one."""
    text = _without_comments(ptx)
    if text is None or not _waits_first(text, entry):
        return False, False
    # every griddepcontrol anywhere in the PTX (a device function's too), in any spacing ptxas accepts,
    # must be a wait
    return True, all(m.group(1) == "wait" for m in _GRIDDEPCONTROL.finditer(text))


def source_hash(source: str) -> str:
    """Content hash identifying a candidate (the source text is the candidate)."""
    return hashlib.sha256(source.encode()).hexdigest()[:20]


@dataclass(frozen=True)
class Candidate:
    """One kernel: its source and where it came from. Identified by the hash of the source."""
    source: str
    family: str | None = None
    params_json: str = "{}"  # template parameters, canonical JSON
    operator: str = "seed"
    parents: tuple[str, ...] = ()

    @property
    def id(self) -> str:
        return source_hash(self.source)

    @property
    def params(self) -> dict:
        return json.loads(self.params_json)

    @property
    def declaration(self) -> LaunchDecl:
        return parse_declaration(self.source)

    @staticmethod
    def make(source: str, *, family: str | None = None, params: dict | None = None,
             operator: str = "seed", parents: tuple[str, ...] = ()) -> Candidate:
        return Candidate(source, family, json.dumps(params or {}, sort_keys=True), operator, tuple(parents))
