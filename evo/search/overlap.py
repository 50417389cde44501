"""LLM answers that overlap GPU work: each call runs on a thread of its own and resolves a future
the evaluator waits on beside its compiles, so a child is compiled and evaluated as soon as its
answer is in, and a slow call delays only its own child (each call is bounded by llm.timeout_s).

Daemon threads: an error in the search does not wait for calls in flight. A stopped run (Ctrl-C)
sends nothing more (calls still waiting for a slot or a retry fail at once, unbilled) and waits a
little for the calls already sent (`wait_for_answers`, llm.stop_grace_s): each is billed, and an
answer that arrives is recorded by its operator the moment it arrives, for `evo resume` to use.
"""
from __future__ import annotations

import concurrent.futures as cf
import logging
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
log = logging.getLogger(__name__)
_in_flight: set[cf.Future] = set()
_lock = threading.Lock()


def in_background(fn: Callable[[], T]) -> cf.Future:
    """fn() on a daemon thread; the future holds its result (or its exception)."""
    fut: cf.Future = cf.Future()

    def run() -> None:
        try:
            fut.set_result(fn())
        except BaseException as e:  # handed to whoever reads the future
            fut.set_exception(e)
        finally:
            with _lock:
                _in_flight.discard(fut)

    with _lock:
        _in_flight.add(fut)
    threading.Thread(target=run, name="llm-call", daemon=True).start()
    return fut


def wait_for_answers(grace_s: float) -> int:
    """On a stop: wait up to `grace_s` for the calls in flight (a second Ctrl-C leaves at once).
    Returns how many were still unanswered when it stopped waiting."""
    with _lock:
        pending = list(_in_flight)
    if not pending or grace_s <= 0:
        return len(pending)
    log.warning(f"waiting up to {grace_s:g} s for {len(pending)} LLM answer(s) in flight: each is billed, and each "
                f"that arrives is recorded for `evo resume` (a second Ctrl-C or kill leaves now)")
    try:
        _, left = cf.wait(pending, timeout=grace_s)
    except KeyboardInterrupt:
        left = {f for f in pending if not f.done()}
    if left:
        log.warning(f"left {len(left)} LLM call(s) unanswered, each billed at an upper estimate: `evo resume` "
                    f"asks them again")
    return len(left)
