"""A one-line progress display for long work: redrawn in place on a terminal, otherwise a log
line every few seconds (so it also lands in the run's log file). Quiet (-q) turns it off."""
from __future__ import annotations

import logging
import sys
import time
from typing import TextIO

log = logging.getLogger(__name__)


class Progress:
    def __init__(self, total: int, label: str = "", *, stream: TextIO | None = None, enabled: bool = True,
                 every_s: float = 5.0):
        self.total, self.label, self.done = max(total, 1), label, 0
        self.stream = stream or sys.stderr
        self.enabled = enabled and log.isEnabledFor(logging.INFO)
        self.every_s = every_s
        self.start = time.monotonic()
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last = 0.0

    def line(self, note: str = "") -> str:
        frac = self.done / self.total
        elapsed = time.monotonic() - self.start
        eta = elapsed / frac - elapsed if frac > 0 else 0
        bar = "#" * int(frac * 24)
        return (f"{self.label} [{bar:<24}] {self.done}/{self.total} {elapsed:5.0f}s elapsed, "
                f"{eta:5.0f}s left {note}")

    def update(self, n: int = 1, note: str = "") -> None:
        self.done += n
        if not self.enabled:
            return
        now = time.monotonic()
        if self.tty:
            self.stream.write("\r" + self.line(note)[:160].ljust(160))
            self.stream.flush()
        elif now - self._last >= self.every_s or self.done >= self.total:
            self._last = now
            log.info(self.line(note))

    def close(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\n")
            self.stream.flush()
