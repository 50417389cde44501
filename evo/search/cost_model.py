"""A learned cost model: predicted log time of a kernel at a shape, to screen children before the GPU.

Features (`features`) come from the source's `#define NAME value` lines (the families' genomes and
what an LLM edit keeps of them), the family, the shape, the tile effects the genome implies at that
shape (padding, wave quantization, k-steps per CTA) and, when given, the ptxas resource report
(registers, spills). The target is log(time / roofline floor), so all shapes share one model.
The fit is ridge regression (numpy least squares on standardized features), refit from every
correct measurement so far, pulled towards a prior fit to past measurements when one is given
(cost_prior.py: the search then ranks before measuring anything); `predict` gives predicted log
time over the floor, by which the search orders seeds, shortlist picks and children.

`screen` keeps the predicted best of many children and, for exploration, a share drawn at random
from the rest, so the GPU evaluates the promising few and the model still sees where it is wrong.
"""
from __future__ import annotations

import math
import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType

import numpy as np

from evo.core.compile_options import options_or_none
from evo.core.kernel import Candidate
from evo.core.records import Resources
from evo.core.shapes import Shape
from evo.families.hopper import rounds

DEFINES = ("BM", "BN", "BK", "WM", "WN", "STAGES", "SPLIT_K", "GROUP_M", "CONSUMERS", "CTAS_PER_SM",
           "SPLIT_CLUSTER", "CLUSTER_M", "PERSISTENT", "THREADS", "TM", "TN")
FAMILIES = ("hopper", "ampere", "simt")
_DEFINE = re.compile(r"^\s*#define\s+(\w+)\s+(\d+)\b", re.M)
NUM_SMS = 132
MIN_ROWS = 12  # measurements before the model ranks anything, without a prior (before: no screening)
# how hard the fit is pulled towards the prior's weights (a ridge penalty on the distance, in
# standardized units): chosen on the H200 archives (benchmarks/search/cost_model_h200.py), where a
# fit on a few dozen of a run's own measurements plus the prior ranked held-out shapes best near it
PRIOR_STRENGTH = 10.0


def features(cand: Candidate, shape: Shape, resources: Resources | None = None, *, num_sms: int = NUM_SMS) -> list[float]:
    d = _genome(cand.source)
    bm, bn, split = d.get("BM", 64), d.get("BN", 64), max(1, d.get("SPLIT_K", 1))
    tm, tn = math.ceil(shape.M / bm), math.ceil(shape.N / bn)
    work = tm * tn * split
    waves, quantization, parts = rounds(work, d.get("CTAS_PER_SM", 1), _tail_cap(cand.source), shape.K, num_sms)
    padding = shape.M * shape.N / (tm * bm * tn * bn)
    reduces = split > 1 or parts > 1  # partial tiles added up in a workspace
    k_steps = shape.K / split / max(1, d.get("BK", 64))
    row = [math.log2(d[k] + 1) if k in d else 0.0 for k in DEFINES]
    row += [1.0 if cand.family == f else 0.0 for f in FAMILIES]
    row += [math.log(shape.M), math.log(shape.N), math.log(shape.K), math.log(padding), math.log(quantization),
            math.log(waves), math.log(k_steps + 1), math.log(bm * bn / (bm + bn)), float(reduces),
            math.log(padding) * math.log(shape.M), math.log(quantization) * math.log(shape.N)]
    r = resources
    row += [math.log2(r.registers + 1) if r else 0.0, math.log2(r.spill_stores + 1) if r else 0.0,
            1.0 if r else 0.0]
    return (row + _option_features(_options(cand.source), d.get("STAGES", 0), k_steps) + [float(_swapped(cand.source))]
            + _fixup_features(cand.source, split if split > 1 else parts) + [float(_pingpong(cand.source))])


_TAIL = re.compile(r"^\s*#define\s+TAIL_SPLIT\s+(\d+)\b", re.M)
_SWAP = re.compile(r"^\s*#define\s+SWAP_AB\s+1\b", re.M)
_STREAM_K = re.compile(r"^\s*#define\s+STREAM_K\s+[12]\b", re.M)
_ORDERED = re.compile(r"^\s*#define\s+FIXUP\s+1\b", re.M)
_PINGPONG = re.compile(r"^\s*#define\s+PINGPONG\s+1\b", re.M)


@lru_cache(maxsize=1024)
def _ordered(source: str) -> bool:
    return _ORDERED.search(source) is not None


def _fixup_features(source: str, parts: int) -> list[float]:
    """Whether a hopper source adds its partials in order (FIXUP=1) and how many it adds in turn: on
    the H200 the ordered fix-up gained with 2-4 parts and lost with 8-16 (benchmarks/session10/). The
    last features (the shipped prior is fit to sweeps that hold FIXUP=1 picks)."""
    if not _ordered(source):
        return [0.0, 0.0]
    return [1.0, math.log2(max(parts, 1))]


@lru_cache(maxsize=1024)
def _pingpong(source: str) -> bool:
    """Whether a hopper source runs ping-pong consumers (PINGPONG=1, session 24). The last feature: no
    archive the shipped prior is fit to holds one (its weight there is 0), so a run learns it from its own
    measurements, as it does the compile options."""
    return _PINGPONG.search(source) is not None


@lru_cache(maxsize=1024)
def _swapped(source: str) -> bool:
    """Whether a hopper source runs the product transposed (SWAP_AB). The first shipped prior's
    measurements predated the gene (weight 0); the refit one holds transposed picks."""
    return _SWAP.search(source) is not None


@lru_cache(maxsize=1024)
def _tail_cap(source: str) -> int:
    """TAIL_SPLIT of a hopper source (1: none), 16 for a STREAM_K one (read as the finest tail split:
    it shares the last round out over every CTA). Not one of DEFINES: the shipped prior has no column
    for either."""
    if _STREAM_K.search(source):
        return 16
    found = _TAIL.search(source)
    return int(found.group(1)) if found else 1


@lru_cache(maxsize=1024)  # a child is ranked at several shapes and generations: read its source once
def _genome(source: str) -> Mapping[str, int]:
    """The source's `#define` values the model knows (shared between callers: read-only)."""
    return MappingProxyType({k: int(v) for k, v in _DEFINE.findall(source) if k in DEFINES})


@lru_cache(maxsize=1024)
def _options(source: str) -> Mapping[str, str]:
    """The source's compile options, read once per source (shared between callers: read-only)."""
    return MappingProxyType(options_or_none(source))


def _option_features(o: Mapping[str, str], stages: int, k_steps: float) -> list[float]:
    """The compile options (compile_options.py) and how deep the pipeline is against the K loop: on
    the H200 the search's new bests over the shortlist were register caps and 6-7 stages where K
    gives 12-16 steps, which the genome features alone could not tell apart. The shipped prior's
    archives have no compile options (its weights for them are 0: a run learns them from its own
    measurements), so what it gained is the depth features': the first prior (fit without the compare
    shapes) ranked the kernels every arm of the H200 compare measured on them
    with a median Spearman of 0.82 (0.75 without), and in its order a kernel within 2% of a shape's
    best comes after 14.7 evaluations (22.7 without; random order 16.4): benchmarks/search/cost_model_h200.py."""
    return [math.log2(int(o["maxrregcount"])) if "maxrregcount" in o else 0.0,
            1.0 if o.get("dlcm") == "cg" else 0.0, 1.0 if o.get("dlcm") == "ca" else 0.0,
            1.0 if "expensive" in o else 0.0, 1.0 if "vectorize" in o else 0.0, float(o.get("minblocks", 0)),
            math.log2(stages + 1) * math.log(k_steps + 1), min(stages, k_steps) / max(k_steps, 1.0)]


@dataclass(frozen=True)
class Prior:
    """A fit to past measurements (built and shipped by cost_prior.py)."""
    gpu: str
    mu: np.ndarray
    sd: np.ndarray
    w: np.ndarray  # standardized features, then the intercept
    rows: int

    @property
    def n_features(self) -> int:
        return len(self.mu)


@dataclass
class CostModel:
    ridge: float = 1.0
    rows: list[tuple[str, list[float], float]] = field(default_factory=list)  # (key, features, target)
    prior: Prior | None = None  # a fit to past measurements (cost_prior.py): ranks before any row
    prior_strength: float = PRIOR_STRENGTH
    _w: np.ndarray | None = None
    _mu: np.ndarray | None = None
    _sd: np.ndarray | None = None

    def add(self, key: str, x: list[float], log_time_over_floor: float) -> None:
        self.rows.append((key, x, log_time_over_floor))
        self._w = None

    @property
    def ready(self) -> bool:
        return self.prior is not None or len(self.rows) >= MIN_ROWS

    def fit(self) -> None:
        rows = sorted(self.rows, key=lambda r: r[0])  # the same fit whatever order measurements arrived in
        y = np.array([r[2] for r in rows], dtype=float)
        if self.prior is not None:  # the prior's scale, and a pull towards its weights
            X = np.array([r[1] for r in rows], dtype=float).reshape(len(rows), self.prior.n_features)
            # a feature constant in the prior's data (the shipped prior saw no compile options: sd 0,
            # weight 0) is scaled by 1, not by that ~0 sd: divided by ~1e-9 its column dwarfs the
            # penalty, and a run's first kernel with such a feature would set its weight unshrunk
            self._mu, self._sd = self.prior.mu, np.where(self.prior.sd < 1e-6, 1.0, self.prior.sd)
            Z = np.hstack([(X - self._mu) / self._sd, np.ones((len(X), 1))])
            reg = self.prior_strength * np.eye(len(self.prior.w))
            self._w = np.linalg.solve(Z.T @ Z + reg, Z.T @ y + reg @ self.prior.w)
            return
        X = np.array([r[1] for r in rows], dtype=float)
        self._mu, self._sd = X.mean(axis=0), X.std(axis=0) + 1e-9
        Z = np.hstack([(X - self._mu) / self._sd, np.ones((len(X), 1))])
        reg = self.ridge * np.eye(Z.shape[1])
        reg[-1, -1] = 0.0  # the intercept is not shrunk
        self._w = np.linalg.solve(Z.T @ Z + reg, Z.T @ y)

    def predict(self, xs: list[list[float]]) -> list[float]:
        """Predicted log(time / floor) per feature row."""
        if not xs:  # np.array([]) is 1-d: it would not broadcast against the features
            return []
        if self._w is None:
            self.fit()
        assert self._w is not None and self._mu is not None and self._sd is not None
        Z = np.hstack([(np.array(xs, dtype=float) - self._mu) / self._sd, np.ones((len(xs), 1))])
        return [float(v) for v in Z @ self._w]


def screen(predicted: list[float], keep: int, rng: random.Random, *, explore: float = 0.25) -> list[int]:
    """Indices of the children to evaluate: the `keep` best predicted, of which a share `explore` is
    drawn at random from the others instead (so the model keeps seeing where it is wrong)."""
    order = sorted(range(len(predicted)), key=lambda i: (predicted[i], i))
    if keep >= len(order):
        return list(range(len(predicted)))
    wild = min(int(round(keep * explore)), len(order) - keep)
    chosen = order[:keep - wild]
    rest = order[keep - wild:]
    chosen += rng.sample(rest, wild)
    return sorted(chosen)


def spearman(a: list[float], b: list[float]) -> float:
    """Rank correlation (ties broken by position)."""
    ra = np.argsort(np.argsort(np.array(a)))
    rb = np.argsort(np.argsort(np.array(b)))
    return float(np.corrcoef(ra, rb)[0, 1])
