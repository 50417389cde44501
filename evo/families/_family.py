"""The Family base: a genome (parameters -> allowed values), constraints, and rendering."""
from __future__ import annotations

import contextlib
import hashlib
import itertools
import math
import numbers
import os
import string
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, cached_property
from importlib import resources
from pathlib import Path
from random import Random

import numpy as np

from evo.core.kernel import Candidate

Params = dict[str, int]

#: held while a family enumerates its valid genomes, so that a thread asking for them meanwhile waits
#: for that enumeration instead of running a second one (hopper's takes seconds)
_ENUMERATING = threading.Lock()


@cache  # read once: a search renders thousands of candidates from the same few templates
def template_text(name: str) -> str:
    return resources.files("evo.families").joinpath(name).read_text()


def genome_cache_dir() -> Path:
    """Where families keep their enumerated genomes: `genomes/` in EVO_CACHE_DIR (the compile cache's
    folder) where it is set, else ~/.cache/evo/genomes."""
    chosen = os.environ.get("EVO_CACHE_DIR")
    return Path(chosen) / "genomes" if chosen else Path.home() / ".cache" / "evo" / "genomes"


@cache
def _families_digest() -> str | None:
    """A digest of every Python module of this package (the genes, constraints and enumeration), or None
    where there are no sources to read."""
    modules = sorted(Path(__file__).parent.glob("*.py"))
    h = hashlib.sha256()
    for module in modules:
        h.update(module.name.encode() + b"\0" + module.read_bytes())
    return h.hexdigest()[:16] if modules else None


@dataclass(frozen=True)
class Family:
    name: str
    description: str
    space: dict[str, tuple[int, ...]]
    template: str  # file name of the .cu template
    _problem: Callable[[Params], str | None] = field(repr=False)
    _derive: Callable[[Params], dict[str, str]] = field(repr=False)  # template values beyond the params
    default: Params = field(default_factory=dict)
    _suggest: Callable[[int, int, int, int], list[Params]] | None = field(default=None, repr=False)
    default_in_shortlist: bool = True  # False: a shape the heuristic does not cover gets no pick at all
    #: genes added after kernels were archived without them, with the value that renders those kernels
    #: (a resumed search or an export reads parameters written before the gene existed)
    later_genes: dict[str, int] = field(default_factory=dict)
    #: products of parameter values that hold every valid configuration, where the whole space is too
    #: large to filter (default: the whole space)
    _subspaces: Callable[[dict[str, tuple[int, ...]]], list[dict[str, tuple[int, ...]]]] | None = field(
        default=None, repr=False)
    #: a gene's values that the rest of `params` allows (default: its whole range), for neighbour steps
    _values_for: Callable[[str, Params], tuple[int, ...] | None] | None = field(default=None, repr=False)
    #: a gene whose larger values only ever add to what a configuration needs (hopper's STAGES: shared
    #: memory): invalid at one value means invalid at every larger one, so enumeration stops there
    growing: str | None = None

    def values_for(self, key: str, params: Params) -> tuple[int, ...]:
        """The values of gene `key` that can be valid beside the other genes of `params` (a mutation's
        neighbours are taken among these)."""
        narrowed = self._values_for(key, self.complete(params)) if self._values_for else None
        return narrowed or self.space[key]

    def complete(self, params: Params) -> Params:
        """`params` with every missing later gene at its value from before the gene existed."""
        missing = {k: v for k, v in self.later_genes.items() if k not in params}
        return dict(params, **missing) if missing else params

    def suggest(self, M: int, N: int, K: int, num_sms: int = 132, limit: int = 8) -> list[Params]:
        """A shortlist of promising configurations for one shape (a heuristic, like a library's)."""
        out: list[Params] = []
        fallback = [self.default] if self.default_in_shortlist else []
        for p in (self._suggest(M, N, K, num_sms) if self._suggest else []) + fallback:
            if self.valid(p) and p not in out:
                out.append(p)
        return out[:limit]

    def problem(self, params: Params) -> str | None:
        """Why these parameters are invalid, or None if they are valid."""
        params = self.complete(params)
        missing = set(self.space) - set(params)
        extra = set(params) - set(self.space)
        if missing or extra:
            return f"parameters must be exactly {sorted(self.space)} (missing {sorted(missing)}, extra {sorted(extra)})"
        for k, v in params.items():
            if v not in self.space[k]:
                return f"{k}={v} is not one of {self.space[k]}"
        return self._problem(params)

    def valid(self, params: Params) -> bool:
        return self.problem(params) is None

    def render(self, params: Params) -> str:
        params = self.complete(params)
        reason = self.problem(params)
        if reason:
            raise ValueError(f"{self.name}: {reason}")
        values = {k: str(v) for k, v in params.items()} | self._derive(params)
        return string.Template(template_text(self.template)).substitute(values)

    def candidate(self, params: Params, *, operator: str = "seed", parents: tuple[str, ...] = ()) -> Candidate:
        params = self.complete(params)
        return Candidate.make(self.render(params), family=self.name, params=params, operator=operator, parents=parents)

    @cached_property
    def all_valid(self) -> tuple[Params, ...]:
        """Every valid configuration, in a stable order. Safe to ask from several threads: one
        enumerates, the others wait for its result (a search builds it in the background, `prepare`)."""
        with _ENUMERATING:  # stored before the lock is let go: a thread that waited finds it there
            if "all_valid" not in self.__dict__:
                self.__dict__["all_valid"] = self._cached_valid()
            return self.__dict__["all_valid"]

    def _cached_valid(self) -> tuple[Params, ...]:
        """all_valid from the genome cache when an earlier process of the same family code enumerated it
        (hopper's enumeration takes seconds of CPU in every process that repairs or draws a genome),
        else enumerated and stored there. The file is named by a digest of every module of this package
        and of the family's genes, so any change to its genes or constraints enumerates again; so does a
        file that cannot be read or holds anything but allowed values of those genes. A cache that cannot
        be written is left alone."""
        keys = list(self.space)
        code = _families_digest()
        if code is None:  # no sources to digest (an install of compiled modules only): no cache
            return self._enumerate_valid()
        genes = hashlib.sha256(repr((list(self.space.items()), self.growing)).encode()).hexdigest()[:8]
        path = genome_cache_dir() / f"{self.name}-{code}-{genes}.npy"
        try:
            table = np.load(path, allow_pickle=False)
            if (table.dtype == np.int32 and table.ndim == 2 and table.shape[1] == len(keys)
                    and all(np.isin(table[:, i], self.space[k]).all() for i, k in enumerate(keys))):
                self.__dict__["_valid_table"] = table.astype(np.int64)  # repair's matrix: read, not rebuilt
                return tuple(dict(zip(keys, row)) for row in table.tolist())
        except Exception:  # noqa: BLE001 -- missing, empty, truncated or foreign: whatever it is, enumerate
            pass
        found = self._enumerate_valid()
        part = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(part, "wb") as f:
                np.save(f, np.array([[p[k] for k in keys] for p in found], dtype=np.int32).reshape(-1, len(keys)))
            os.replace(part, path)  # whole or not at all, for processes enumerating at the same time
        except OSError:
            pass
        finally:  # a write cut short (a full disk, Ctrl-C) leaves no temporary file behind
            with contextlib.suppress(OSError):
                part.unlink(missing_ok=True)
        return found

    def _enumerate_valid(self) -> tuple[Params, ...]:
        keys = list(self.space)
        parts = self._subspaces(self.space) if self._subspaces else [self.space]
        return tuple(p for part in parts for p in self._valid_in(part, keys))

    def _valid_in(self, part: dict[str, tuple[int, ...]], keys: list[str]) -> list[Params]:
        """The valid configurations of one product of values, in the product's order."""
        if self.growing is None:
            combos = (dict(zip(keys, values)) for values in itertools.product(*(part[k] for k in keys)))
            return [p for p in combos if self._problem(p) is None]
        # the growing gene innermost, ascending, up to its first invalid value; then the product's order
        g, rest = self.growing, [k for k in keys if k != self.growing]
        at, growing_values = keys.index(g), sorted(part[g])
        found = []
        for values in itertools.product(*(part[k] for k in rest)):
            row = [*values[:at], 0, *values[at:]]  # in `keys` order, the growing gene's slot filled below
            for v in growing_values:  # (hopper: 1.5 million combinations, so no per-key work in here)
                row[at] = v
                p = dict(zip(keys, row))
                if self._problem(p) is not None:
                    break
                found.append(p)
        index = {k: {v: i for i, v in enumerate(part[k])} for k in keys}
        assert all(len(index[k]) == len(part[k]) for k in keys), "a gene lists a value twice"  # else not the product's order
        return sorted(found, key=lambda p: tuple(index[k][p[k]] for k in keys))

    def prepare(self) -> None:
        """Build the tables that `random` and `repair` read (every valid genome; for hopper several
        seconds of CPU), so that the first repair of a search does not stall its loop."""
        self._valid_table  # noqa: B018 (a cached property: reading it builds it)

    def random(self, rng: Random) -> Params:
        return dict(rng.choice(self.all_valid))

    @cached_property
    def _valid_table(self) -> np.ndarray:
        """all_valid as a matrix, one row per configuration and one column per parameter (for repair)."""
        return np.array([[p[k] for k in self.space] for p in self.all_valid], dtype=np.int64)

    def repair(self, params: Params, rng: Random, keep: tuple[str, ...] = ()) -> Params:
        """The valid configuration closest to `params` (fewest differing parameters; ties at random,
        drawn among the ties in all_valid's order). `keep`: genes whose values in `params` the repair
        holds where a valid configuration has them all at most one parameter farther than the nearest
        (a mutation's new value: repairing it back to the parent's undoes the mutation; holding it at
        any cost would change many other genes)."""
        params = self.complete(params)
        if self.valid(params):
            return dict(params)
        distances = self._distances(params)
        if keep:
            columns = list(self.space)
            held = np.ones(len(distances), dtype=bool)
            for key in keep:
                held &= self._valid_table[:, columns.index(key)] == params[key]
            if held.any() and distances[held].min() <= distances.min() + 1:
                distances = np.where(held, distances, np.iinfo(np.int64).max)
        nearest = np.flatnonzero(distances == distances.min()).tolist()
        return dict(self.all_valid[rng.choice(nearest)])

    def _distances(self, params: Params) -> np.ndarray:
        """How many parameters of each valid configuration differ from `params` (one numpy pass: the
        hopper genome has thousands of valid configurations, and repair runs for most children)."""
        table = self._valid_table
        differ = np.zeros(len(table), dtype=np.int64)
        for column, key in enumerate(self.space):
            value = params.get(key)
            if isinstance(value, numbers.Real):
                differ += table[:, column] != value
            else:  # missing, or not a number: differs from every valid value
                differ += 1
        return differ


def split_for(tiles: int, k_tiles: int, num_sms: int, cap: int = 32, min_k_tiles: int = 4) -> int:
    """Split K until the tiles fill the GPU, keeping at least `min_k_tiles` k-steps per split."""
    split = 1
    while tiles * split * 2 <= num_sms and k_tiles // (split * 2) >= min_k_tiles and split * 2 <= cap:
        split *= 2
    return split


#: shared memory of an H100/H200: the most one CTA may use, and what the CTAs on one SM share (less
#: 1 KiB reserved per CTA)
SMEM_LIMIT = 232448
SMEM_PER_SM = 233472

#: split-K counts of the families whose splits are plain K ranges (any count works; the last split may be short)
ANY_SPLITS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32)


def wave_split(M: int, N: int, bm: int, bn: int, k_tiles: int, num_sms: int, min_k_tiles: int = 4,
               cap: int = 32) -> int:
    """The split count (powers of two or not) that best fills whole waves of `num_sms` work slots,
    by `tile_score`: 40 tiles split 3 ways fill 120 of 132 SMs, where 2 ways fill 80 and 4 ways
    spill a second wave."""
    usable = [s for s in ANY_SPLITS if s <= cap and (s == 1 or k_tiles // s >= min_k_tiles)]
    return max(usable, key=lambda s: (tile_score(M, N, bm, bn, s, num_sms), -s))


def tile_intensity(bm: int, bn: int) -> float:
    """A discount for small tiles, which re-read their operands more often: operand reuse
    bm*bn/(bm+bn) relative to a 128x256 tile's, to the power 1/4, at most 1."""
    return min(1.0, (bm * bn / (bm + bn)) / (128 * 256 / 384)) ** 0.25


def tile_score(M: int, N: int, bm: int, bn: int, split: int, num_sms: int, reduction_cost: float = 0.25) -> float:
    """Useful fraction of issued work (padding waste, wave quantization), discounted for small tiles,
    which re-read their operands more often (intensity bm*bn/(bm+bn) relative to a 128x256 tile)."""
    tm, tn = -(-M // bm), -(-N // bn)
    work = tm * tn * split
    waves = -(-work // num_sms)
    intensity = tile_intensity(bm, bn)
    reduction = 1 + reduction_cost * math.log2(split)  # split-K pays for its fp32 reduction (measured on the H200)
    return (M * N) / (tm * bm * tn * bn) * work / (waves * num_sms) * intensity / reduction


def mma_sync_snippet() -> str:
    """The mma.sync building blocks (cp.async copies, swizzled shared-memory offsets, ldmatrix, the
    m16n8k16 multiply-accumulate) that the ampere and skinny templates share; pasted into each source,
    because a candidate is one self-contained text."""
    return template_text("mma_sync.cuh").rstrip("\n")


#: floats of the split-K workspace (EVO_WS_FLOATS in splitk.cuh): partial tiles must fit in it
WS_FLOATS = 8 * 1024 * 1024


def splitk_snippet(wanted: bool) -> str:
    """The split-K reduction (splitk.cuh) where a kernel adds partial tiles over L2, else nothing."""
    return template_text("splitk.cuh") if wanted else ""


def tile_rows(bm: int, pair: int = 1) -> str:
    """The rows of tiles a kernel's workspace slots cover: cdiv(M, bm), rounded up to whole pairs of
    rows for a multicast pair (whose second tile may lie beyond M and still counts a slot)."""
    return f"cdiv(M, {bm})" if pair == 1 else f"cdiv(cdiv(M, {bm}), {pair}) * {pair}"


def splitk_requires(split_k: int, bm: int, bn: int, pair: int = 1) -> str:
    """Declaration lines that keep a split-K kernel within its workspace and counters (a slot a tile)."""
    if split_k == 1:
        return ""
    rows = tile_rows(bm, pair)
    return (f"\n// @evo requires = {rows} * cdiv(N, {bn}) * {bm * bn} <= {WS_FLOATS}"
            f"\n// @evo requires = {rows} * cdiv(N, {bn}) <= 65536")
