"""LLM answers that overlap GPU work: each call runs on a thread of its own and resolves a future
the evaluator waits on beside its compiles, so a child is compiled and evaluated as soon as its
answer is in, and a slow call delays only its own child (each call is bounded by llm.timeout_s).

Daemon threads: Ctrl-C or an error in the search does not wait for calls in flight (every answer
that does arrive is still recorded by the operator the moment it arrives).
"""
from __future__ import annotations

import concurrent.futures as cf
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def in_background(fn: Callable[[], T]) -> cf.Future:
    """fn() on a daemon thread; the future holds its result (or its exception)."""
    fut: cf.Future = cf.Future()

    def run() -> None:
        try:
            fut.set_result(fn())
        except BaseException as e:  # handed to whoever reads the future
            fut.set_exception(e)

    threading.Thread(target=run, name="llm-call", daemon=True).start()
    return fut
