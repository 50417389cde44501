"""The `evo` command line: a thin layer that turns arguments into library calls.

    evo run [overrides]        the search (a Hydra application: --help, --cfg job, overrides)
    evo resume ARCHIVE         continue the last unfinished run of an archive
    evo bench [overrides]      time the libraries (and given kernels) on a shape set
    evo sweep [overrides]      evaluate a family's genome exhaustively or by random sample
    evo selftest [overrides]   run deliberately bad kernels: each must be caught on this GPU
    evo archive ...            browse an archive (evo archive --help)
    evo export ARCHIVE         write the best kernel per shape, a manifest and a loader
    evo report ARCHIVE         one HTML file with the plots of a run
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

from evo.errors import EvoError

CONF_DIR = str(Path(__file__).resolve().parent.parent / "conf")
HYDRA_COMMANDS = ("run", "bench", "sweep", "selftest")


def _fail(message: str, code: int = 2) -> None:
    print(f"evo: error: {message}", file=sys.stderr)
    sys.exit(code)


def compose(overrides: list[str]):
    """Compose conf/ with overrides, as `evo run` would; raises EvoError with one clear line."""
    from hydra import compose as hydra_compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from evo.config import register_configs, validate
    from evo.errors import ConfigError
    register_configs()
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=CONF_DIR, version_base=None):
            cfg = hydra_compose(config_name="config", overrides=list(overrides))
    except Exception as e:  # hydra and omegaconf raise many types; all mean a bad override
        raise ConfigError(_first_line(e)) from None
    return validate(cfg), cfg


def _first_line(e: Exception) -> str:
    """One line out of Hydra's and OmegaConf's multi-line errors (and their causes)."""
    texts, cause = [], e
    while cause is not None and len(texts) < 4:
        texts.append(str(cause))
        cause = cause.__cause__ or cause.__context__
    lines = [l.strip() for t in texts for l in t.splitlines() if l.strip()]
    if not lines:
        return type(e).__name__
    msg = lines[0]
    if "Could not find" in msg:  # unknown option of a group: list what exists
        raw = texts[0].splitlines()
        start = next((i for i, l in enumerate(raw) if l.startswith("Available options")), None)
        opts = []
        for l in raw[start + 1:] if start is not None else []:
            if not l.startswith((" ", "\t")) or not l.strip():
                break
            if not l.strip().startswith("base_"):
                opts.append(l.strip())
        msg = msg.replace("In 'config': ", "")
        return f"{msg} (available: {', '.join(opts)})" if opts else msg
    for detail in lines[1:]:
        if detail.startswith(("Key '", "Value '", "Cannot", "Invalid", "Error")) and detail not in msg:
            return f"{msg} {detail}"
    return msg


def _hydra_command(name: str, task: Callable) -> None:
    import hydra
    from evo.config import register_configs, validate
    argv = sys.argv[2:]
    if not any(a.startswith("-") for a in argv):  # plain overrides: reject mistakes in one line
        try:
            compose(argv)
        except EvoError as e:
            _fail(str(e))
    register_configs()
    sys.argv = [f"evo {name}"] + argv

    @hydra.main(version_base=None, config_path=CONF_DIR, config_name="config")
    def app(cfg) -> None:
        try:
            task(validate(cfg), cfg)
        except EvoError as e:
            _fail(str(e))
        except KeyboardInterrupt:
            _fail("interrupted: the archive holds everything finished so far; `evo resume` continues", 130)

    app()


def _run(c, raw) -> None:
    from evo.search import run_search
    run_search(c, raw)


def _bench(c, raw) -> None:
    from evo.bench import run_bench
    run_bench(c, raw)


def _sweep(c, raw) -> None:
    from evo.sweep import run_sweep
    run_sweep(c, raw)


def _selftest(c, raw) -> None:
    from evo.evaluation.evaluator import Evaluator
    from evo.evaluation.selftest import run_selftest
    from evo.preflight import preflight
    preflight(c)
    ev = Evaluator(c.evaluator, log=print).start()
    try:
        print(f"self-test on {ev.devices[0].key} ({c.evaluator.backend})")
        rows = run_selftest(ev)
    finally:
        ev.close()
    failed = [r for r in rows if not r["pass"]]
    print(f"{len(rows) - len(failed)}/{len(rows)} as expected")
    if failed:
        sys.exit(1)


def main(argv: list[str] | None = None) -> None:
    if argv is not None:
        sys.argv = ["evo", *argv]
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help", "help"):
        print(__doc__.strip())
        return
    command = sys.argv[1]
    try:
        if command in HYDRA_COMMANDS:
            _hydra_command(command, {"run": _run, "bench": _bench, "sweep": _sweep, "selftest": _selftest}[command])
        elif command == "resume":
            from evo.search import resume_cli
            resume_cli(sys.argv[2:])
        elif command == "archive":
            from evo.archive_cli import archive_cli
            archive_cli(sys.argv[2:])
        elif command == "export":
            from evo.export import export_cli
            export_cli(sys.argv[2:])
        elif command == "report":
            from evo.report import report_cli
            report_cli(sys.argv[2:])
        else:
            _fail(f"unknown command {command!r}: try `evo --help`")
    except EvoError as e:
        _fail(str(e))
    except KeyboardInterrupt:
        _fail("interrupted", 130)
