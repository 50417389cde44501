"""A one-line progress display for long work (stderr, redrawn in place on a terminal)."""
from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, total: int, label: str = "", *, stream=None, enabled: bool = True):
        self.total, self.label, self.done = max(total, 1), label, 0
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.start = time.monotonic()
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last = 0.0

    def update(self, n: int = 1, note: str = "") -> None:
        self.done += n
        now = time.monotonic()
        if not self.enabled or (not self.tty and now - self._last < 5 and self.done < self.total):
            return
        self._last = now
        frac = self.done / self.total
        elapsed = now - self.start
        eta = elapsed / frac - elapsed if frac > 0 else 0
        bar = "#" * int(frac * 24)
        line = (f"{self.label} [{bar:<24}] {self.done}/{self.total} {elapsed:5.0f}s elapsed, "
                f"{eta:5.0f}s left {note}")
        self.stream.write(("\r" + line[:160].ljust(160)) if self.tty else line + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.tty:
            self.stream.write("\n")
            self.stream.flush()
