"""Signals held off while a stopped command writes what it has: a second Ctrl-C (or the SIGTERM that
`timeout` sends to the whole process group) would otherwise cut the table it is printing."""
from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


@contextlib.contextmanager
def stop_signals_held() -> Iterator[None]:
    """Block SIGINT and SIGTERM inside the block (main thread, where the platform can); one that
    arrived meanwhile is delivered when the block ends."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)
