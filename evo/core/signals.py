"""Signals held off while a stopped command writes what it has: a second Ctrl-C (or the SIGTERM that
`timeout` sends to the whole process group) would otherwise cut the table it is printing."""
from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def stop_signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM that arrive inside the block are noted, not acted on; the first is raised
    again, to its own handler, when the block ends. (Blocking them with pthread_sigmask would not do:
    the kernel hands a process's signal to any thread not blocking it, and Python then runs the
    handler in the main thread anyway.) Only the main thread can change handlers: elsewhere this
    holds nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.getsignal(s) for s in STOP_SIGNALS}
    held = [s for s, handler in previous.items() if handler is not None]  # None: a handler set outside Python
    arrived: list[int] = []
    for s in held:
        signal.signal(s, lambda signum, frame: arrived.append(signum))
    try:
        yield
    finally:
        for s in held:
            signal.signal(s, previous[s])
        if arrived:
            signal.raise_signal(arrived[0])
