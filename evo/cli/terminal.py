"""What the command line shows: results on stdout, evo's log messages on stderr, one-line errors."""
from __future__ import annotations

import contextlib
import logging
import os
import re
import sys


class _TerminalFormatter(logging.Formatter):
    """Messages as they are; warnings and errors say so; worker messages name their GPU."""

    def format(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        if record.levelno >= logging.WARNING:
            text = f"{record.levelname.lower()}: {text}"
        elif record.levelno < logging.INFO:
            text = f"[{record.name}] {text}"
        return text


class _TerminalHandler(logging.StreamHandler):
    """A stream whose reader went away (`evo run ... 2>&1 | head`) is sent to /dev/null, without a
    "Logging error" traceback for every message that follows; the main module's SIGPIPE handler
    stops a run as Ctrl-C would."""

    def handleError(self, record: logging.LogRecord) -> None:
        if isinstance(sys.exc_info()[1], BrokenPipeError):
            drop_broken_stream(self.stream)
        else:
            super().handleError(record)


def drop_broken_stream(stream) -> None:
    """Point a stream whose reader went away at /dev/null, so later writes and the flush at exit pass quietly."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())


def _is_result(record: logging.LogRecord) -> bool:
    return bool(getattr(record, "result", False))


def configure_logging(level: int) -> None:
    """A command's results (records logged with evo.core.logs.RESULT: tables, the end of a run) go
    to stdout, whatever the level; every other message at `level` or above to stderr. A run adds
    its own complete log file (see evo.search.session)."""
    root = logging.getLogger("evo")
    for h in [h for h in root.handlers if getattr(h, "_evo_terminal", False)]:
        root.removeHandler(h)
    messages = _TerminalHandler(sys.stderr)
    messages.setFormatter(_TerminalFormatter())
    messages.setLevel(level)
    messages.addFilter(lambda r: not _is_result(r))
    results = _TerminalHandler(sys.stdout)
    results.setFormatter(logging.Formatter("%(message)s"))
    results.addFilter(_is_result)
    for h in (messages, results):
        h._evo_terminal = True  # type: ignore[attr-defined]
        root.addHandler(h)
    root.setLevel(min(level, logging.INFO))
    root.propagate = False


def fail(message: str, code: int = 2) -> None:
    _exit_saying(f"evo: error: {message}", code)


def stopped(message: str, stop: BaseException | None = None) -> None:
    """A command stopped by Ctrl-C or a signal: not an error of the user's, so no "error:"; exit 130 (as
    for SIGINT), or 128 + the signal's number where `stop` came from another (evo.cli.main's "signal N":
    143 for the SIGTERM of `kill` or `timeout`), as a shell reports a process the signal ended."""
    signum = re.fullmatch(r"signal (\d+)", str(stop or ""))
    _exit_saying(f"evo: {message}", 128 + int(signum.group(1)) if signum else 130)


def _exit_saying(line: str, code: int) -> None:
    try:
        print(line, file=sys.stderr)
    except BrokenPipeError:  # stderr's reader went away too (`2>&1 | head`): the exit code still says it
        drop_broken_stream(sys.stderr)
    sys.exit(code)


def interrupted(archive: str, resume: str | None = None) -> str:
    """The line for a stopped recorded command: where its work is, and (a search) how to continue it."""
    if resume:
        return f"interrupted: run stopped; continue it with `{resume}`"
    return f"interrupted: {archive} holds everything finished so far"
