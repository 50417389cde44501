"""`evo report`: one self-contained HTML file (plots embedded) plus the PNGs, to understand a run
in a minute: speedups by bucket and as M x N maps per K, best-so-far per island, operator
probabilities over time, MAP-Elites coverage and QD-score, failures by cause, and how many
evaluations and library timings ran on a throttled GPU (those evaluations are kept out of the cells).
"""
from __future__ import annotations

import base64
import importlib
import json
import logging
import math
import warnings
from collections import defaultdict
from pathlib import Path

from evo.archive import Archive
from evo.archive import queries as q
from evo.archive.empty import no_kernels, run_label
from evo.archive.search_state import policy_history
from evo.core.errors import EvoError
from evo.core.extras import install_hint
from evo.core.logs import RESULT, simulated_note
from evo.core.shapes import BUCKETS, Shape
from evo.core.summary import bucket_table, geomean

log = logging.getLogger(__name__)


def _plt():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


SIMULATED_STAMP = "SIMULATED: modelled by the CPU test double, not measured"


def _save(fig, path: Path, stamp: str, **kw) -> None:
    """Write the figure, marked in its bottom right corner with `stamp` (a simulated run's figures say so
    on their face, not only in the page around them), and free it."""
    if stamp:  # below everything drawn (axis labels may reach below the figure), clear of the titles at the top
        lowest = fig.get_tightbbox(fig.canvas.get_renderer()).y0 / fig.get_figheight()  # inches -> figure fraction
        fig.text(0.995, min(lowest, 0.0) - 0.01, stamp, ha="right", va="top", color="red", fontsize=8, weight="bold")
        kw.setdefault("bbox_inches", "tight")  # the saved image grows to take it in
    fig.savefig(path, dpi=110, **kw)
    _plt().close(fig)


NICE_TICKS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 1, 1.1, 1.25, 1.5, 2, 3, 5, 10, 20, 50, 100)


def _plain_log_ticks(ax) -> None:
    """Ticks of a log axis written as plain numbers (0.8, 1, 1.25, not 8x10^-1), at most 9 of them
    across the axis's range, the unlabelled minor ticks kept."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter
    low, high = ax.get_ylim()
    ticks = [t for t in NICE_TICKS if low <= t <= high]
    while len(ticks) > 9:  # every other one, 1 (parity with the library) always kept
        ticks = sorted(set(ticks[::2]) | ({1} & set(ticks)))
    ax.yaxis.set_major_locator(FixedLocator(ticks))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def speedup_by_bucket(elites: list[dict], path: Path, stamp: str = "") -> None:
    plt = _plt()
    libs = sorted({lib for e in elites for lib in e["libraries"]})
    labels = [b[0] for b in BUCKETS]
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for j, lib in enumerate(libs):
        for i, label in enumerate(labels):
            ys = [e[f"vs_{lib}"] for e in elites if Shape(e["M"], e["N"], e["K"]).bucket == label and e.get(f"vs_{lib}")]
            xs = [i + (j - (len(libs) - 1) / 2) * 0.22] * len(ys)
            ax.scatter(xs, ys, s=14, alpha=0.7, label=lib if i == 0 else None, color=f"C{j}")
    ax.axhline(1.0, color="k", lw=0.8, ls="--")
    ax.set_xticks(range(len(labels)), labels)
    ax.set_yscale("log")
    _plain_log_ticks(ax)
    ax.set_ylabel("speedup (library time / kernel time)")
    ax.set_title("Best kernel per shape against each library, by FLOP bucket")
    ax.legend(fontsize=8)
    fig.tight_layout()
    _save(fig, path, stamp)


def speedup_maps(elites: list[dict], path: Path, stamp: str = "") -> bool:
    """M x N heatmaps of the speedup over the best library, one panel per K (grid-like shape sets)."""
    plt = _plt()
    ks = sorted({e["K"] for e in elites})
    ms, ns = sorted({e["M"] for e in elites}), sorted({e["N"] for e in elites})
    if len(ms) < 2 or len(ns) < 2:
        return False
    ks = ks[:6]
    fig, axes = plt.subplots(1, len(ks), figsize=(3.2 * len(ks), 3.2), squeeze=False)
    import numpy as np
    for ax, k in zip(axes[0], ks):
        grid = np.full((len(ms), len(ns)), np.nan)
        for e in elites:
            if e["K"] == k and e["speedup"]:
                grid[ms.index(e["M"]), ns.index(e["N"])] = e["speedup"]
        im = ax.imshow(np.log2(grid), cmap="RdBu", vmin=-1.5, vmax=1.5, origin="lower")
        ax.set_xticks(range(len(ns)), ns, rotation=90, fontsize=6)
        ax.set_yticks(range(len(ms)), ms, fontsize=6)
        ax.set_title(f"K = {k}", fontsize=9)
        ax.set_xlabel("N", fontsize=8)
        ax.set_ylabel("M", fontsize=8)
    fig.colorbar(im, ax=axes[0].tolist(), label="log2 speedup vs best library", shrink=0.8)
    fig.suptitle("Speedup over the best library (blue: faster)", fontsize=10)
    _save(fig, path, stamp, bbox_inches="tight")
    return True


def best_so_far(a: Archive, run_id: int, path: Path, stamp: str = "") -> None:
    """Per island: geomean over its shapes of the best speedup found so far, against evaluations.

    A curve starts once the island has a correct kernel on every shape it ever evaluates, so that
    it only rises (a geomean over a growing set of shapes would not be comparable over time)."""
    plt = _plt()
    rows = q.evaluation_trace(a, run_id)
    final_cells = defaultdict(set)
    for r in rows:
        if r["island"] is not None and r["speedup"]:
            final_cells[r["island"]].add((r["M"], r["N"], r["K"]))
    best: dict = defaultdict(dict)
    series: dict = defaultdict(list)
    for n, r in enumerate(rows, start=1):
        if r["island"] is None or not r["speedup"]:
            continue
        cells = best[r["island"]]
        key = (r["M"], r["N"], r["K"])
        cells[key] = max(cells.get(key, 0), r["speedup"])
        if len(cells) == len(final_cells[r["island"]]):
            series[r["island"]].append((n, geomean(list(cells.values()))))
    fig, ax = plt.subplots(figsize=(8, 4))
    for island, pts in sorted(series.items()):
        ax.step([p[0] for p in pts], [p[1] for p in pts], where="post",
                label=f"island {island} ({len(final_cells[island])} shapes)")
    ax.set_xlabel("evaluations (whole run)")
    ax.set_ylabel("geomean over its shapes of the best speedup")
    ax.set_title("Best so far per island")
    if series:
        ax.legend(fontsize=8)
    fig.tight_layout()
    _save(fig, path, stamp)


def operator_probabilities(a: Archive, run_id: int, path: Path, stamp: str = "") -> None:
    """Mean probability of each operator over contexts, after each generation."""
    plt = _plt()
    gens, curves = [], defaultdict(list)
    for generation, probs in policy_history(a, run_id):
        if not probs:
            continue
        gens.append(generation)
        ops = sorted({op for p in probs.values() for op in p})
        for op in ops:
            curves[op].append(sum(p.get(op, 0) for p in probs.values()) / len(probs))
    fig, ax = plt.subplots(figsize=(8, 4))
    for op, ys in sorted(curves.items()):
        ax.plot(gens[-len(ys):], ys, label=op)
    ax.set_xlabel("generation")
    ax.set_ylabel("probability (mean over contexts)")
    ax.set_title("Operator probabilities learned by the policy")
    if curves:
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    _save(fig, path, stamp)


def coverage(a: Archive, run_id: int, n_cells: int, path: Path, stamp: str = "") -> None:
    plt = _plt()
    cells: dict = {}
    xs, cov, qd = [], [], []
    for r in q.elite_history(a, run_id):
        cells[r["cell"]] = r["speedup"] or 0
        xs.append(r["evaluations_so_far"])
        cov.append(len(cells) / max(n_cells, 1))
        qd.append(sum(math.log(v) for v in cells.values() if v > 0))
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.step(xs, cov, where="post", color="C0")
    ax.set_ylabel("cells filled (fraction)", color="C0")
    ax.set_xlabel("evaluations")
    ax2 = ax.twinx()
    ax2.step(xs, qd, where="post", color="C1")
    ax2.set_ylabel("QD-score (sum of log speedups)", color="C1")
    ax.set_title("MAP-Elites coverage and QD-score")
    fig.tight_layout()
    _save(fig, path, stamp)


def failures_plot(rows: list[dict], path: Path, stamp: str = "") -> None:
    plt = _plt()
    by_status: dict[str, dict[str, int]] = defaultdict(dict)
    for r in rows:
        by_status[r["status"]][r["operator"] or "-"] = r["count"]
    ops = sorted({op for d in by_status.values() for op in d})
    fig, ax = plt.subplots(figsize=(8, 3.5))
    bottom = [0] * len(by_status)
    names = sorted(by_status)
    for j, op in enumerate(ops):
        vals = [by_status[s].get(op, 0) for s in names]
        ax.bar(names, vals, bottom=bottom, label=op, color=f"C{j % 10}")
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_ylabel("evaluations")
    ax.set_title("Failures by cause and operator")
    if ops:
        ax.legend(fontsize=7)
    plt.setp(ax.get_xticklabels(), rotation=20, fontsize=8)
    fig.tight_layout()
    _save(fig, path, stamp)


def _require_report_extra() -> None:
    """matplotlib and Jinja2 come with the `report` extra; say in one line what to install if either is missing."""
    missing = []
    for module, name in (("matplotlib", "matplotlib"), ("jinja2", "Jinja2")):
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(name)
    if missing:
        raise EvoError(f"evo report needs matplotlib and Jinja2 ({' and '.join(missing)} missing): {install_hint('report')}")


def report(archive_path: str, *, run_id: int | None = None, out: str | None = None) -> Path:
    _require_report_extra()
    a = Archive.open(archive_path, readonly=True)
    run = q.resolve_run(a, run_id)
    rid = run["id"]
    stem = Path(archive_path[:-3] if archive_path.endswith(".gz") else archive_path).with_suffix("")
    out_dir = Path(out or f"{stem}-report-run{rid}")
    out_dir.mkdir(parents=True, exist_ok=True)
    elites = q.elites(a, rid)
    if not elites:
        log.warning(f"the report shows no speedups: {no_kernels(a, run, 'report')}")
    config = json.loads(run["config_json"] or "{}")
    shapes_cfg = config.get("shapes", {})
    from evo.core.shapes import build_shape_set
    try:
        n_cells = len(build_shape_set(listed=shapes_cfg.get("list", []), grid=shapes_cfg.get("grid", [])))
    except Exception:
        n_cells = len(elites)
    simulated = run.get("backend") == "simulated" or any(e["backend"] == "simulated" for e in elites)
    stamp = SIMULATED_STAMP if simulated else ""
    pngs = {"speedup_by_bucket.png": lambda p: speedup_by_bucket(elites, p, stamp),
            "speedup_maps.png": lambda p: speedup_maps(elites, p, stamp),
            "best_so_far.png": lambda p: best_so_far(a, rid, p, stamp),
            "operator_probabilities.png": lambda p: operator_probabilities(a, rid, p, stamp),
            "coverage.png": lambda p: coverage(a, rid, n_cells, p, stamp),
            "failures.png": lambda p: failures_plot(q.failures(a, rid), p, stamp)}
    made = []
    with warnings.catch_warnings():  # matplotlib's notes on empty plots (no legend entries, ...) are noise here
        warnings.simplefilter("ignore", UserWarning)
        for name, draw in pngs.items():
            if draw(out_dir / name) is not False:
                made.append(name)
    table = bucket_table({Shape(e["M"], e["N"], e["K"]): e for e in elites})
    page = _html(run, elites, table, made, out_dir, simulated, n_cells, q.throttling(a, rid))
    (out_dir / "report.html").write_text(page, encoding="utf-8")
    log.info(f"{simulated_note('simulated' if simulated else 'gpu')}report of {run_label(run)}: "
             f"{out_dir / 'report.html'} (+ {len(made)} PNGs)", extra=RESULT)
    return out_dir / "report.html"


def _num(x, spec: str = ".3f", scale: float = 1) -> str:
    """A number formatted with `spec` (after multiplying by `scale`); anything else as "-"."""
    return format(x * scale, spec) if isinstance(x, (int, float)) else "-"


def _html(run, elites, table, pngs, out_dir: Path, simulated: bool, n_cells: int, throttling: dict) -> str:
    """The page, from the packaged template evo/templates/report.html.j2 (autoescaped)."""
    import jinja2
    env = jinja2.Environment(loader=jinja2.PackageLoader("evo", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined)
    env.filters["num"] = _num
    images = [{"title": name[:-4].replace("_", " "),
               "data": base64.b64encode((out_dir / name).read_bytes()).decode("ascii")} for name in pngs]
    return env.get_template("report.html.j2").render(
        run=dict(run), elites=elites, table=table, pngs=images, simulated=simulated, n_cells=n_cells,
        throttling=throttling)
