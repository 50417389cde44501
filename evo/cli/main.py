"""`evo`: global options, logging to the terminal, and dispatch to the commands."""
from __future__ import annotations

import logging
import sys

from evo.core.errors import EvoError
from evo.core.version import VERSION

HYDRA_COMMANDS = ("run", "bench", "sweep", "selftest")
QUIET, VERBOSE = ("-q", "--quiet"), ("-v", "--verbose")


class _TerminalFormatter(logging.Formatter):
    """Messages as they are; warnings and errors say so; worker messages name their GPU."""

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        if record.levelno >= logging.WARNING:
            text = f"{record.levelname.lower()}: {text}"
        elif record.levelno < logging.INFO:
            text = f"[{record.name}] {text}"
        return text


def configure_logging(level: int) -> None:
    """evo's messages to stderr at `level`; a run adds its own log file (see evo.search.session)."""
    root = logging.getLogger("evo")
    for h in [h for h in root.handlers if getattr(h, "_evo_terminal", False)]:
        root.removeHandler(h)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_TerminalFormatter())
    handler.setLevel(level)
    handler._evo_terminal = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(min(level, logging.INFO))
    root.propagate = False


def fail(message: str, code: int = 2) -> None:
    print(f"evo: error: {message}", file=sys.stderr)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    level = logging.INFO
    if any(a in QUIET for a in args):
        level = logging.WARNING
    if any(a in VERBOSE for a in args):
        level = logging.DEBUG
    args = [a for a in args if a not in QUIET + VERBOSE]
    if args[:1] in (["--version"], ["-V"]) or (args[1:2] == ["--version"] and args[0] not in HYDRA_COMMANDS):
        print(f"evo {VERSION}")
        return
    if not args or args[0] in ("-h", "--help", "help"):
        from evo import cli
        print((cli.__doc__ or "").strip())
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
        else:
            fail(f"unknown command {command!r}: try `evo --help`")
    except EvoError as e:
        fail(str(e))
    except KeyboardInterrupt:
        fail("interrupted", 130)
