"""`evo archive`: browse an archive from the terminal (tables), or as JSON for scripts (--json)."""
from __future__ import annotations

import argparse
import difflib
import json
import sys
from pathlib import Path

from evo.archive import Archive
from evo.archive import queries as q
from evo.archive.empty import no_failures, no_kernels, no_llm_calls
from evo.cli.tables import format_table
from evo.families import FAMILIES


def _emit(args, rows, columns, headers=None, empty: str = "(nothing)") -> None:
    if args.json:
        print(json.dumps(rows, indent=1, default=str))
    elif rows:
        print(format_table(rows, columns, headers))
    else:
        print(empty)


def cmd_runs(args) -> None:
    paths = args.archives or sorted(str(p) for p in Path("runs").glob("*.sqlite"))
    if not paths:
        print("no archives given and none under runs/: `evo archive runs PATH`")
        return
    rows = []
    for p in paths:
        for r in Archive.open(p, readonly=True).runs():
            rows.append({"archive": p, **r})
    _emit(args, rows, ["archive", "id", "kind", "status", "backend", "created_at", "evaluations", "correct",
                       "kernels", "cells"])


def cmd_elites(args) -> None:
    a = Archive.open(args.archive, readonly=True)
    run = q.resolve_run(a, args.run)
    rows = q.elites(a, run["id"])
    if args.json:
        print(json.dumps(rows, indent=1, default=str))
        return
    for r in rows:
        r["shape"], r["time_us"] = r["cell"], r["time_ms"] * 1e3
        r["kernel"] = r["kernel_id"][:12]
        r["made_by"] = f"{r['family'] or '-'}/{r['operator']}"
        if args.params:
            r["config"] = genes_apart_from_default(r["family"], r["params_json"])
    libs = sorted({lib for r in rows for lib in r["libraries"]})
    _note_simulated(rows)
    extra = ["config"] if args.params else []
    _emit(args, rows, ["shape", "kernel", "made_by", "time_us", "tflops", "clock_mhz", *[f"vs_{lib}" for lib in libs],
                       "library_clock_mhz", "roofline_fraction", "mode", *extra],
          ["shape", "kernel", "family/operator", "time_us", "TFLOP/s", "MHz", *[f"x_{lib}" for lib in libs],
           "lib MHz", "roofline", "mode", *(["genes (besides the family default)"] if extra else [])],
          empty=no_kernels(a, run, "archive elites"))


def genes_apart_from_default(family: str | None, params_json: str | None) -> str:
    """A family kernel's genes where they differ from the family's default ("default" when none do);
    "-" for a kernel without a family genome (an LLM edit)."""
    fam = FAMILIES.get(family or "")
    params = json.loads(params_json or "{}")
    if fam is None or not params:
        return "-"
    params = fam.complete(params)
    return " ".join(f"{k}={v}" for k, v in params.items() if fam.default.get(k) != v) or "default"


def _note_simulated(rows: list[dict]) -> None:
    if any(r.get("backend") == "simulated" for r in rows):
        print("NOTE: backend=simulated: these results are MODELLED by the CPU test double, not measured")


def cmd_show(args) -> None:
    a = Archive.open(args.archive, readonly=True)
    k = q.kernel(a, args.kernel)
    if args.json:
        print(json.dumps(k, indent=1, default=str))
        return
    print(f"kernel {k['id']}  family {k['family']}  operator {k['operator']}  parents {k['parents_json']}")
    print(f"params {k['params_json']}\ndeclaration {k['declaration_json']}")
    for c in k["compiles"]:
        print(f"compile {c['status']}: {c['registers']} registers, {c['smem_static']} B static smem, "
              f"{c['spill_stores']} B spills, {c['stack']} B stack, {c['seconds']:.1f} s")
        if c["status"] != "ok":
            print(c["log"])
    print()
    _note_simulated(k["evaluations"])
    print(format_table(k["evaluations"], ["id", "run_id", "M", "N", "K", "status", "mode", "time_ms", "speedup",
                                          "best_library", "roofline_fraction", "backend"]))
    for call in k["llm_calls"]:
        print(f"\n--- made by LLM call {call['id']} ({call['operator']}, {call['model']}, ${call['cost_usd'] or 0:.4f})")
        print(call["prompt"])
    print("\n--- source\n" + k["source"])


def cmd_lineage(args) -> None:
    a = Archive.open(args.archive, readonly=True)
    rows = q.lineage(a, args.kernel)
    for r in rows:
        r["kernel"] = "  " * r["depth"] + r["kernel_id"][:12]
        r["parents"] = ", ".join(p[:12] for p in r["parents"])
    _emit(args, rows, ["kernel", "family", "operator", "best_speedup", "best_on", "parents"])
    if not args.json:  # the JSON rows carry their backend
        _note_simulated(rows)


def cmd_diff(args) -> None:
    a = Archive.open(args.archive, readonly=True)
    ka, kb = q.kernel(a, args.a), q.kernel(a, args.b)
    diff = difflib.unified_diff(ka["source"].splitlines(True), kb["source"].splitlines(True),
                                fromfile=ka["id"][:12], tofile=kb["id"][:12])
    sys.stdout.writelines(diff)


def cmd_failures(args) -> None:
    a = Archive.open(args.archive, readonly=True)
    run = q.resolve_run(a, args.run)
    run_id = run["id"]
    rows = q.failures(a, run_id)
    # children that failed before any evaluation (an operator's error, a child no shape supports) are
    # not evaluations: the search counts them in its state
    made = (a.get_state(run_id, "search") or {}).get("failures") or {}
    if rows and not args.json:
        _note_simulated([run])  # a failure of the test double is modelled too (it never ran the kernel)
    _emit(args, rows, ["status", "operator", "count"], empty=no_failures(run))
    if made and not args.json:
        print("children that never reached the evaluator (counted by the search): "
              + ", ".join(f"{k} {v}" for k, v in sorted(made.items(), key=lambda kv: -kv[1])))


def cmd_llm(args) -> None:
    """Every call of the run, then totals by operator and outcome, then the run's total and cache-read share."""
    a = Archive.open(args.archive, readonly=True)
    run = q.resolve_run(a, args.run)
    run_id = run["id"]
    calls, totals = q.llm_call_list(a, run_id), q.llm_usage(a, run_id)
    tokens = {k: sum(r[k] or 0 for r in totals) for k in ("input_tokens", "cache_read_tokens", "cache_write_tokens")}
    prompt_tokens = sum(tokens.values())
    summary = {"calls": len(calls), "cost_usd": round(sum(r["cost_usd"] or 0 for r in totals), 4),
               "cache_read_share": round(tokens["cache_read_tokens"] / prompt_tokens, 3) if prompt_tokens else None,
               "replayed": sum(r["replayed"] or 0 for r in calls)}
    if args.json:
        print(json.dumps({"calls": calls, "totals": totals, "summary": summary}, indent=1, default=str))
        return
    _emit(args, calls, ["id", "operator", "outcome", "stop_reason", "input_tokens", "output_tokens",
                        "cache_read_tokens", "cache_write_tokens", "cost_usd", "latency_s", "kernel", "error"],
          ["id", "operator", "outcome", "stop", "in", "out", "cache rd", "cache wr", "USD", "s", "kernel", "error"],
          empty=no_llm_calls(run))
    if calls:
        print()
        _emit(args, totals, ["operator", "outcome", "calls", "input_tokens", "output_tokens", "cache_read_tokens",
                             "cache_write_tokens", "cache_read_share", "cost_usd", "avg_latency_s"])
        share = "n/a" if summary["cache_read_share"] is None else f"{summary['cache_read_share']:.1%}"
        replayed = f" ({summary['replayed']} replayed: costs as recorded)" if summary["replayed"] else ""
        print(f"total ${summary['cost_usd']:.4f} over {summary['calls']} calls{replayed}; "
              f"cache reads {share} of prompt tokens")


def cmd_upgrade(args) -> None:
    """The one browsing command that writes: migrate the archive to this evo's schema."""
    a = Archive.open(args.archive, create=False)
    version = a.schema_version
    a.close()
    print(f"{args.archive}: schema version {version}, as this evo writes it")


def cmd_serve(args) -> None:
    from evo.serve import serve
    serve(args.archive, port=args.port, open_browser=False)


def archive_cli(argv: list[str]) -> None:
    p = argparse.ArgumentParser(prog="evo archive", description="Browse a search archive.")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    sub = p.add_subparsers(dest="cmd", required=True)

    def add(name, fn, help_, *, archive=True, run=False):
        s = sub.add_parser(name, help=help_, description=help_)
        s.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
        if archive:
            s.add_argument("archive", help="the SQLite archive of a search")
        if run:
            s.add_argument("--run", type=int, default=None, help="run id (default: the last run)")
        s.set_defaults(fn=fn)
        return s

    s = sub.add_parser("runs", help="list runs and counts", aliases=["ls"])
    s.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="machine-readable output")
    s.add_argument("archives", nargs="*", help="archives (default: runs/*.sqlite)")
    s.set_defaults(fn=cmd_runs)
    add("elites", cmd_elites, "best kernel per shape: time, speedup vs each library, roofline fraction", run=True) \
        .add_argument("--params", action="store_true", help="also each kernel's genes besides its family's default")
    add("show", cmd_show, "a kernel: source, declaration, resources, evaluations, the prompt that made it") \
        .add_argument("kernel", help="kernel id (a unique prefix is enough)")
    add("lineage", cmd_lineage, "a kernel's ancestors and the operators that made them") \
        .add_argument("kernel", help="kernel id (a unique prefix is enough)")
    d = add("diff", cmd_diff, "unified diff of two kernels' sources")
    d.add_argument("a")
    d.add_argument("b")
    add("failures", cmd_failures, "failed evaluations by cause and operator", run=True)
    add("llm", cmd_llm, "LLM calls (operator, outcome, stop reason, tokens, cache, cost, latency) and totals",
        run=True)
    add("upgrade", cmd_upgrade, "migrate an archive written by an older evo to this evo's schema (the other "
        "browsing commands open archives read-only and read older ones as they are)")
    add("serve", cmd_serve, "browse the archive in Datasette (read-only) on localhost") \
        .add_argument("--port", type=int, default=8001)
    args = p.parse_args(argv)
    args.fn(args)
