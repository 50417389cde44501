"""What the command line shows: results on stdout, evo's log messages on stderr, one-line errors."""
from __future__ import annotations

import logging
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


def _is_result(record: logging.LogRecord) -> bool:
    return bool(getattr(record, "result", False))


def configure_logging(level: int) -> None:
    """A command's results (records logged with evo.core.logs.RESULT: tables, the end of a run) go
    to stdout, whatever the level; every other message at `level` or above to stderr. A run adds
    its own complete log file (see evo.search.session)."""
    root = logging.getLogger("evo")
    for h in [h for h in root.handlers if getattr(h, "_evo_terminal", False)]:
        root.removeHandler(h)
    messages = logging.StreamHandler(sys.stderr)
    messages.setFormatter(_TerminalFormatter())
    messages.setLevel(level)
    messages.addFilter(lambda r: not _is_result(r))
    results = logging.StreamHandler(sys.stdout)
    results.setFormatter(logging.Formatter("%(message)s"))
    results.addFilter(_is_result)
    for h in (messages, results):
        h._evo_terminal = True  # type: ignore[attr-defined]
        root.addHandler(h)
    root.setLevel(min(level, logging.INFO))
    root.propagate = False


def fail(message: str, code: int = 2) -> None:
    print(f"evo: error: {message}", file=sys.stderr)
    sys.exit(code)
