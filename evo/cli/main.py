"""`evo`: global options, logging to the terminal, and dispatch to the commands."""
from __future__ import annotations

import logging
import signal
import sys

from evo.cli.terminal import configure_logging, fail, stopped
from evo.core.errors import EvoError
from evo.core.version import VERSION

USAGE = """The `evo` command line: a thin layer that turns arguments into library calls.

    evo run [overrides]        the search (a Hydra application: --help, --cfg job, -m for multirun)
    evo resume ARCHIVE         continue the last unfinished search run of an archive
    evo bench [overrides]      time the libraries (and given kernels) on a shape set
    evo sweep [overrides]      evaluate the families' configurations: shortlist, random or exhaustive
    evo compare [overrides]    the search against the shortlist and random sweeps at equal budget
    evo selftest [overrides]   run deliberately bad kernels: each must be caught on this GPU
    evo archive ...            browse an archive (evo archive --help)
    evo export ARCHIVE         write the best kernel per shape, a manifest and the cubins
    evo report ARCHIVE         one HTML file with the plots of a run
    evo cluster CONFIG.yaml    start a Dask cluster on SLURM/PBS for evaluator.cluster=ADDRESS

Options before or after the command: -q/--quiet (warnings and results only), -v/--verbose
(debug messages), --version. Every run also writes a complete log beside its archive."""
HYDRA_COMMANDS = ("run", "bench", "sweep", "compare", "selftest")
QUIET, VERBOSE = ("-q", "--quiet"), ("-v", "--verbose")


#: the commands that record a run in an archive (evo.search.session)
RECORDING = HYDRA_COMMANDS + ("resume",)


def _command(args: list[str]) -> str | None:
    return next((a for a in args if a not in QUIET + VERBOSE), None)


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    level = logging.INFO
    if any(a in QUIET for a in args):
        level = logging.WARNING
    if any(a in VERBOSE for a in args):
        level = logging.DEBUG
    args = [a for a in args if a not in QUIET + VERBOSE]
    if args[:1] in (["--version"], ["-V"]) or (len(args) > 1 and "--version" in args[1:]):
        print(f"evo {VERSION}")
        return
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE)
        return
    configure_logging(level)
    command, rest = args[0], args[1:]
    try:
        if command in HYDRA_COMMANDS:
            from evo.cli.hydra_app import hydra_command
            hydra_command(command, rest)
        elif command == "resume":
            from evo.cli.commands import resume_cli
            resume_cli(rest)
        elif command == "archive":
            from evo.cli.browse import archive_cli
            archive_cli(rest)
        elif command == "export":
            from evo.cli.commands import export_cli
            export_cli(rest)
        elif command == "report":
            from evo.cli.commands import report_cli
            report_cli(rest)
        elif command == "cluster":
            from evo.cli.commands import cluster_cli
            cluster_cli(rest)
        else:
            fail(f"unknown command {command!r}: try `evo --help`")
    except EvoError as e:
        fail(str(e))
    except KeyboardInterrupt as stop:
        stopped("interrupted", stop)


def _stop(signum, frame) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _reader_gone(signum, frame) -> None:
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # later writes fail quietly (evo.cli.terminal)
    raise KeyboardInterrupt("broken pipe")


def entry() -> None:
    """The `evo` command (and `python -m evo`): main() as a process of its own."""
    if hasattr(signal, "SIGPIPE"):  # `evo archive ... | head`: end quietly when the reader goes away;
        # a recorded command (`evo run ... 2>&1 | head`) stops as on Ctrl-C: run "stopped", resumable
        signal.signal(signal.SIGPIPE, _reader_gone if _command(sys.argv[1:]) in RECORDING else signal.SIG_DFL)
    signal.signal(signal.SIGTERM, _stop)  # kill PID: the same clean stop as Ctrl-C (run marked "stopped")
    main()
