"""Structured-config schemas for every group under conf/, registered with Hydra's ConfigStore.

Types are checked by OmegaConf when the config is composed; ranges and choices are checked by
`validate()`, which raises a ConfigError naming the key, before any work starts.
"""
from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Optional

from omegaconf import MISSING, DictConfig, OmegaConf

from evo.core.errors import ConfigError, ShapeError
from evo.core.shapes import build_shape_set

#: the choices of `mutator.structural` and `family` (evo.mutators and evo.families implement
#: exactly these; a test keeps the lists in step)
STRUCTURAL_OPERATORS = ("mutate_one", "mutate_many", "crossover", "change_family", "compile_options", "revert_gene",
                        "next_pick", "replay_change")
#: replay_change is off by default: not yet measured on a GPU (benchmarks/session13/NEXT.md)
DEFAULT_STRUCTURAL = tuple(op for op in STRUCTURAL_OPERATORS if op != "replay_change")
FAMILY_NAMES = ("simt", "ampere", "hopper", "skinny")


@dataclass
class ShapesConfig:
    name: str = MISSING
    list: builtins.list[str] = field(default_factory=builtins.list)  # "MxNxK" entries
    grid: builtins.list[int] = field(default_factory=builtins.list)  # cubic grid of sizes (the field above
    # shadows the builtin `list` inside this class, hence `builtins.list`)


@dataclass
class SearchConfig:
    seed: int = 0
    max_evaluations: int = 2000  # evaluations of (kernel, shape) pairs
    max_wall_hours: float = 0.0  # 0: no limit
    children_per_island: int = 8  # children made per island per generation
    transfer_every: int = 3  # generations between elite transfers to neighbouring shapes
    shapes_per_child: int = 1  # shapes a new child is evaluated on
    seeds_per_shape: int = 2  # shortlist picks per shape and family evaluated first (1 when the budget is tight)
    repair_share: float = 0.25  # at most this share of a generation's children repair failed children
    # k > 1: make k times the structural children, the cost model picks the 1/k to evaluate (3: the best
    # arm of the H200 compare, 1.011x the shortlist over 3 seeds against 0.995x unscreened)
    screen_factor: int = 3
    screen_explore: float = 0.25  # share of the screened-in children drawn at random instead
    # start the cost model from its prior (a fit to past H200 sweeps, evo/search/cost_prior.json): it then
    # orders the seeds and next_pick/change_family's shortlist picks from the first generation.
    # auto: on a GPU (not on the simulated backend, whose times are not the H200's); on; off
    cost_prior: str = "auto"
    seed_pool: int = 12  # shortlist picks per shape and family the cost model chooses the seeds among
    # the budget allocator counts no shape's headroom below this time (us; 0: the roofline alone). A
    # 64x64x64 measured against its roofline (nanoseconds) looks improvable for ever and took 68 of the
    # quick preset's 173 H200 evaluations; at 2 us it took 20, but that one A/B's bests were no better
    # (geomean 0.960 against 0.984 of the libraries) and the 68 had found a 64^3 kernel at 2.09 us, 10%
    # under the libraries (benchmarks/session13/README.md). Off until a seeded A/B says otherwise.
    latency_floor_us: float = 0.0
    # every shape gets at least this many evaluations before the bandit may pass it over (0: off). In an
    # H100 compare at 24 a shape the bandit gave shapes 4 to 79 evaluations, and the search lost most
    # where it starved one (1x6144x4096: 15, 7.8% behind the shortlist; benchmarks/session29). Off until
    # the compare's `floor` arm says otherwise.
    min_evaluations_per_shape: int = 0
    progress: bool = True


@dataclass
class IslandsConfig:
    n: int = 4
    population: int = 12
    tournament: int = 3
    migration: str = "ring"  # ring | full | off
    migration_interval: int = 4  # generations
    migrants: int = 2
    specialize: str = "family"  # none | family | bucket


@dataclass
class MutatorConfig:
    policy: str = "reinforce"  # reinforce | uniform
    learning_rate: float = 0.2
    baseline_decay: float = 0.9
    min_probability: float = 0.03
    structural: list[str] = field(default_factory=lambda: list(DEFAULT_STRUCTURAL))
    penalty_compile_error: float = -1.0
    penalty_incorrect: float = -1.0
    penalty_crash: float = -2.0
    evaluation_cost: float = 0.02  # the reward of a correct child without a gain beyond noise is minus this
    penalty_duplicate: float = -0.01  # a child measured before (no evaluation spent)
    # what a child's gain is measured against: "best" (the better of its parent's speedup at the shape
    # and the shape's best so far: credit only for children that move the shape) or "parent"
    reward_against: str = "best"


@dataclass
class LLMPrice:
    """USD per million tokens, and the smallest prompt prefix the model caches (tokens)."""
    in_per_mtok: float = MISSING
    out_per_mtok: float = MISSING
    cache_write_per_mtok: float = MISSING
    cache_read_per_mtok: float = MISSING
    min_cache_tokens: int = 1024


@dataclass
class LLMConfig:
    backend: str = "auto"  # auto (anthropic if ANTHROPIC_API_KEY is set, else none) | none | anthropic | replay
    model: str = "claude-sonnet-5"
    temperature: Optional[float] = None  # None: the model's default (some models take no temperature)
    # output tokens per answer, thinking included: a full rewrite of hopper.cu is about 5.6k tokens (see docs/llm.md)
    max_tokens: int = 32000
    thinking_budget: int = 0  # extended-thinking tokens (part of max_tokens); 0: no extended thinking
    budget_usd: float = 20.0
    concurrency: int = 4
    timeout_s: float = 600.0  # wall-clock limit of one call, retries and waits included
    idle_timeout_s: float = 90.0  # no byte from the API for this long: the attempt is given up
    max_retries: int = 4
    retry_after_cap_s: float = 30.0  # a longer retry-after is cut to this
    stop_grace_s: float = 30.0  # on Ctrl-C, how long to wait for LLM answers in flight (they are billed)
    base_url: Optional[str] = None
    replay_from: Optional[str] = None  # archive whose recorded responses answer (llm=replay)
    replay_run: Optional[int] = None  # run in replay_from whose calls answer (default: the last with calls)
    edit_format: str = "search_replace"  # search_replace | full
    prompts: list[str] = field(default_factory=list)  # empty: every template under mutators/prompts
    preflight: bool = True  # one tiny call before the first generation checks key and model
    prices_date: str = ""  # when the table below was taken from the vendor's price list
    prices: dict[str, LLMPrice] = field(default_factory=dict)  # model -> price (conf/llm/_prices.yaml)
    # the user's own price for a model not in the table (USD per million tokens); all four or none
    price_in_per_mtok: Optional[float] = None
    price_out_per_mtok: Optional[float] = None
    price_cache_write_per_mtok: Optional[float] = None
    price_cache_read_per_mtok: Optional[float] = None


@dataclass
class EvaluatorConfig:
    backend: str = "gpu"  # gpu | simulated (CPU test double; its numbers are never measurements)
    gpus: list[int] = field(default_factory=list)  # empty: every visible GPU
    draws: int = 3  # random input draws per correctness check
    mode: str = "rotating"  # timing mode of the fitness: rotating (hot cannot verify every launch)
    modes: list[str] = field(default_factory=lambda: ["rotating"])  # modes measured per evaluation
    replays: int = 5  # graph replays, median taken
    # racing: a kernel whose first replay (fitness mode) is slower than race_factor x the fastest kernel
    # timed so far on its shape and GPU gets no further replays: its one sample is its time (0: never)
    race_factor: float = 1.3
    target_replay_ms: float = 20.0  # launches per graph chosen so one replay lasts about this long
    timeout_s: float = 60.0  # per (kernel, shape) evaluation, then the worker is killed and restarted
    libraries: list[str] = field(default_factory=lambda: ["torch", "cublaslt_heuristic", "cublaslt_autotuned"])
    server_gap_ms: list[float] = field(default_factory=lambda: [0.05, 2.0])
    compile_timeout_s: float = 180.0
    compile_workers: int = 0  # 0: every CPU core
    cache_dir: Optional[str] = None
    cluster: Optional[str] = None  # None: this machine's GPUs, one process each | local | tcp://HOST:PORT (Dask)
    cluster_workers: int = 0  # cluster=local: Dask workers (0: one per visible GPU; the simulated backend: 2)
    # cluster set: jobs waiting on each GPU worker beyond the one it runs, so that its next job is already
    # there when one ends (0: one job per worker, each GPU idles a round trip to the driver between jobs)
    cluster_queue: int = 1
    # true: time each kernel whose PTX waits for the grid before it first (every family's does) as a
    # programmatic dependent launch, as evo.dispatch runs it. Off by default since session 31: in the timing
    # graphs the kernel before a launch is the same kernel, and PDL gained 0.10-0.30 us a call there that it
    # did not keep behind a one-element fill kernel (0.22-0.27 us slower than plain; one H100 run); plain
    # launches, like the libraries', timed the same either way (docs/timing.md, "How kernels are launched")
    pdl: bool = False


@dataclass
class ArchiveConfig:
    path: str = "runs/evo.sqlite"


@dataclass
class SweepConfig:
    budget: int = 200  # configurations per family (exhaustive when the genome is smaller)
    sample: str = "random"  # random | exhaustive | shortlist (each family's heuristic picks)
    # shortlist only: heuristic (the families' ranking, rank-major) | prior (the cost model's prior picks
    # `budget` of the 24-pick shortlist and orders them by predicted time; docs/search.md)
    order: str = "heuristic"


@dataclass
class CompareConfig:
    budget: int = 24  # evaluations per shape for every arm
    seeds: int = 3  # seeds of the seeded arms (search, uniform, random_tc); the shortlist runs once
    out: str = "runs/compare"  # folder of the arms' archives and compare.json
    arms: list[str] = field(default_factory=lambda: ["search", "shortlist", "random_tc", "uniform"])
    report_only: bool = False  # only tabulate the finished arms found in `out`, at the budget and shapes they ran
    # every arm's per-shape best timed again side by side, this many rounds (0: not), so that no arm's
    # figure is the luckiest of many draws (evo/search/retime.py)
    retime_rounds: int = 3


#: the arms `evo compare` knows (evo.search.compare implements exactly these)
COMPARE_ARMS = ("search", "shortlist", "random_tc", "uniform", "screened", "unscreened", "no_prior", "replay",
                "floor")


@dataclass
class EvoConfig:
    shapes: ShapesConfig = MISSING
    search: SearchConfig = MISSING
    islands: IslandsConfig = MISSING
    mutator: MutatorConfig = MISSING
    llm: LLMConfig = MISSING
    evaluator: EvaluatorConfig = MISSING
    archive: ArchiveConfig = MISSING
    sweep: SweepConfig = field(default_factory=SweepConfig)
    compare: CompareConfig = field(default_factory=CompareConfig)
    family: Optional[str] = None  # evo sweep: the family to sweep (default: all)
    kernels: list[str] = field(default_factory=list)  # evo bench: .cu files to time beside the libraries
    kernels_of: Optional[str] = None  # evo bench: an archive whose per-shape best kernels are timed, each on its shape


GROUPS = {"shapes": ShapesConfig, "search": SearchConfig, "islands": IslandsConfig, "mutator": MutatorConfig,
          "llm": LLMConfig, "evaluator": EvaluatorConfig, "archive": ArchiveConfig}


def register_configs() -> None:
    """Register the schemas; each group's YAML options extend theirs via `- base_<group>`."""
    from hydra.core.config_store import ConfigStore
    cs = ConfigStore.instance()
    cs.store(name="evo_schema", node=EvoConfig)
    for group, schema in GROUPS.items():
        cs.store(group=group, name=f"base_{group}", node=schema)


def _choice(key: str, value, allowed) -> None:
    if value not in allowed:
        raise ConfigError(f"{key}={value!r}: must be one of {', '.join(map(str, allowed))}")


def _at_least(key: str, value, low) -> None:
    if value < low:
        raise ConfigError(f"{key}={value}: must be >= {low}")


def as_dict(cfg: DictConfig | EvoConfig | None, fallback: EvoConfig | None = None) -> dict:
    """The configuration as plain JSON-able data (what a run stores in the archive)."""
    if cfg is None:
        cfg = fallback
    if cfg is None:
        return {}
    node = cfg if isinstance(cfg, DictConfig) else OmegaConf.structured(cfg)
    data = OmegaConf.to_container(node, resolve=True)
    assert isinstance(data, dict)
    return data


def validate(cfg: DictConfig | EvoConfig) -> EvoConfig:
    """Check ranges and choices; return the typed config object."""
    c = OmegaConf.to_object(cfg) if isinstance(cfg, DictConfig) else cfg
    if not isinstance(c, EvoConfig):
        raise ConfigError("the configuration does not follow evo's schema (compose it from evo.conf)")
    try:
        build_shape_set(listed=c.shapes.list, grid=c.shapes.grid)
    except ShapeError as e:
        raise ConfigError(f"shapes: {e}") from None
    _at_least("search.max_evaluations", c.search.max_evaluations, 1)
    _at_least("search.max_wall_hours", c.search.max_wall_hours, 0)
    _at_least("search.children_per_island", c.search.children_per_island, 1)
    _at_least("search.transfer_every", c.search.transfer_every, 0)
    _at_least("search.shapes_per_child", c.search.shapes_per_child, 1)
    _at_least("search.seeds_per_shape", c.search.seeds_per_shape, 1)
    _at_least("search.seed_pool", c.search.seed_pool, 1)
    if c.compare.retime_rounds < 0:
        raise ConfigError(f"compare.retime_rounds={c.compare.retime_rounds}: must be 0 (no re-timing) or more")
    if c.search.cost_prior not in ("auto", "on", "off"):
        raise ConfigError(f"search.cost_prior={c.search.cost_prior!r}: must be auto, on or off")
    _at_least("search.screen_factor", c.search.screen_factor, 1)
    _at_least("search.latency_floor_us", c.search.latency_floor_us, 0)
    _at_least("search.min_evaluations_per_shape", c.search.min_evaluations_per_shape, 0)
    if not 0 <= c.search.screen_explore <= 1:
        raise ConfigError(f"search.screen_explore={c.search.screen_explore}: must be in [0, 1]")
    if not 0 <= c.search.repair_share <= 1:
        raise ConfigError(f"search.repair_share={c.search.repair_share}: must be in [0, 1]")
    _at_least("islands.n", c.islands.n, 1)
    _at_least("islands.population", c.islands.population, 2)
    _at_least("islands.tournament", c.islands.tournament, 1)
    _at_least("islands.migration_interval", c.islands.migration_interval, 1)
    _at_least("islands.migrants", c.islands.migrants, 0)
    _choice("islands.migration", c.islands.migration, ("ring", "full", "off"))
    _choice("islands.specialize", c.islands.specialize, ("none", "family", "bucket"))
    _choice("mutator.policy", c.mutator.policy, ("reinforce", "uniform"))
    _choice("mutator.reward_against", c.mutator.reward_against, ("parent", "best"))
    _at_least("mutator.learning_rate", c.mutator.learning_rate, 0)
    _at_least("mutator.evaluation_cost", c.mutator.evaluation_cost, 0)
    if not 0 <= c.mutator.baseline_decay < 1:
        raise ConfigError(f"mutator.baseline_decay={c.mutator.baseline_decay}: must be in [0, 1)")
    if not 0 <= c.mutator.min_probability < 1:
        raise ConfigError(f"mutator.min_probability={c.mutator.min_probability}: must be in [0, 1)")
    for op in c.mutator.structural:
        _choice("mutator.structural", op, STRUCTURAL_OPERATORS)
    _choice("llm.backend", c.llm.backend, ("auto", "none", "anthropic", "replay"))
    _choice("llm.edit_format", c.llm.edit_format, ("search_replace", "full"))
    _at_least("llm.budget_usd", c.llm.budget_usd, 0)
    _at_least("llm.concurrency", c.llm.concurrency, 1)
    _at_least("llm.max_tokens", c.llm.max_tokens, 1)
    _at_least("llm.timeout_s", c.llm.timeout_s, 1)
    _at_least("llm.idle_timeout_s", c.llm.idle_timeout_s, 1)
    _at_least("llm.retry_after_cap_s", c.llm.retry_after_cap_s, 0)
    _at_least("llm.max_retries", c.llm.max_retries, 0)
    _at_least("llm.thinking_budget", c.llm.thinking_budget, 0)
    if c.llm.thinking_budget and not 1024 <= c.llm.thinking_budget < c.llm.max_tokens:
        raise ConfigError(f"llm.thinking_budget={c.llm.thinking_budget}: extended thinking takes 1024 tokens or more "
                          f"and less than llm.max_tokens={c.llm.max_tokens} (the answer needs the rest); "
                          f"0 turns it off")
    if c.llm.backend == "replay" and not c.llm.replay_from:
        raise ConfigError("llm=replay needs llm.replay_from=PATH (an archive with recorded LLM calls)")
    _choice("evaluator.backend", c.evaluator.backend, ("gpu", "simulated"))
    if c.evaluator.mode == "hot":
        raise ConfigError("evaluator.mode=hot: hot mode cannot verify every timed launch (a result cache could "
                          "look faster), so it never gives the fitness; measure it beside with "
                          "evaluator.modes=[rotating,hot]")
    _choice("evaluator.mode", c.evaluator.mode, ("rotating",))
    for m in c.evaluator.modes:
        _choice("evaluator.modes", m, ("rotating", "hot", "server"))
    _at_least("evaluator.draws", c.evaluator.draws, 1)
    _at_least("evaluator.replays", c.evaluator.replays, 1)
    _at_least("evaluator.timeout_s", c.evaluator.timeout_s, 1)
    _at_least("evaluator.compile_timeout_s", c.evaluator.compile_timeout_s, 1)
    _at_least("evaluator.cluster_workers", c.evaluator.cluster_workers, 0)
    _at_least("evaluator.cluster_queue", c.evaluator.cluster_queue, 0)
    if c.evaluator.cluster and c.evaluator.cluster != "local" and "://" not in c.evaluator.cluster:
        raise ConfigError(f"evaluator.cluster={c.evaluator.cluster!r}: give local (a Dask cluster on this machine) or "
                          "a scheduler address such as tcp://10.0.0.5:8786")
    for lib in c.evaluator.libraries:
        _choice("evaluator.libraries", lib, ("torch", "cublaslt_heuristic", "cublaslt_autotuned"))
    _choice("sweep.sample", c.sweep.sample, ("random", "exhaustive", "shortlist"))
    _choice("sweep.order", c.sweep.order, ("heuristic", "prior"))
    _at_least("sweep.budget", c.sweep.budget, 1)
    _at_least("compare.budget", c.compare.budget, 1)
    _at_least("compare.seeds", c.compare.seeds, 1)
    for arm in c.compare.arms:
        _choice("compare.arms", arm, COMPARE_ARMS)
    if c.family is not None:
        _choice("family", c.family, FAMILY_NAMES)
    if not c.archive.path:
        raise ConfigError("archive.path is empty: give the SQLite file of this search")
    return c
