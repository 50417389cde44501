"""What the command line shows: evo's log messages on stderr, and one-line errors."""
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


def configure_logging(level: int) -> None:
    """evo's messages to stderr at `level`; a run adds its own log file (see evo.search.session)."""
    root = logging.getLogger("evo")
    for h in [h for h in root.handlers if getattr(h, "_evo_terminal", False)]:
        root.removeHandler(h)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_TerminalFormatter())
    handler.setLevel(min(level, logging.INFO))
    if level > logging.INFO:  # quiet: warnings, errors and results (records logged with RESULT)
        handler.addFilter(lambda r: r.levelno >= level or bool(getattr(r, "result", False)))
    handler._evo_terminal = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(min(level, logging.INFO))
    root.propagate = False


def fail(message: str, code: int = 2) -> None:
    print(f"evo: error: {message}", file=sys.stderr)
    sys.exit(code)
