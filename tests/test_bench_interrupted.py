"""`evo bench` stopped part-way (Ctrl-C, a `timeout -s INT`) still shows and stores what it timed."""
import logging

import pytest

from evo.archive import Archive
from evo.cli.hydra_app import compose
from evo.evaluation.evaluator import Evaluator
from evo.families import HOPPER
from evo.search.bench import run_bench


def _stopping_after(n: int):
    """Evaluator.evaluate that yields its first n results, then raises KeyboardInterrupt (as Ctrl-C or
    `timeout -s INT` would, while the next evaluation runs)."""
    real = Evaluator.evaluate

    def evaluate(self, pairs, **kw):
        for i, e in enumerate(real(self, pairs, **kw)):
            if i == n:
                raise KeyboardInterrupt
            yield e
    return evaluate


def test_an_interrupted_bench_prints_and_keeps_the_shapes_it_finished(tmp_path, monkeypatch, caplog, compile_cache):
    kernel = tmp_path / "k.cu"
    kernel.write_text(HOPPER.render(HOPPER.default))
    c, raw = compose(["evaluator=simulated", "shapes=inline", "shapes.list=[64x64x64,256x256x256,1024x1024x1024]",
                      "search.progress=false", f"kernels=[{kernel}]", f"archive.path={tmp_path / 'b.sqlite'}"])
    # the interruption lands while the second kernel timing runs
    monkeypatch.setattr(Evaluator, "evaluate", _stopping_after(1))
    with caplog.at_level(logging.INFO), pytest.raises(KeyboardInterrupt):
        run_bench(c, raw)
    text = caplog.text
    assert "interrupted: the 3 of 3 shapes whose libraries were timed, with 1 of 3 kernel timings" in text
    assert " k_us" in text and "missing" in text  # the untimed kernel rows say so
    a = Archive.open(tmp_path / "b.sqlite", create=False, readonly=True)
    run = a.last_run()
    rows = a.get_state(run["id"], "bench_rows")
    a.close()
    assert run["status"] == "stopped"
    assert len(rows) == 3 and sum(r["kernel_k.cu_ms"] is not None for r in rows) == 1
    assert all(r["torch_ms"] for r in rows)


def test_an_interrupted_sweep_prints_and_keeps_the_table_of_what_it_finished(tmp_path, monkeypatch, caplog,
                                                                             compile_cache):
    """A sweep cut by `timeout -s INT` (as the GPU sessions cut theirs) shows the bucket table of the
    evaluations that finished, and stores it as the run's summary, before it stops."""
    from evo.search.sweep import run_sweep
    c, raw = compose(["evaluator=simulated", "shapes=inline", "shapes.list=[64x64x64,256x256x256,1024x1024x1024]",
                      "sweep.sample=shortlist", "sweep.budget=2", "family=hopper", "search.progress=false",
                      f"archive.path={tmp_path / 's.sqlite'}"])
    monkeypatch.setattr(Evaluator, "evaluate", _stopping_after(3))
    with caplog.at_level(logging.INFO), pytest.raises(KeyboardInterrupt):
        run_sweep(c, raw)
    assert "stopped after 3 of 6 evaluations; speedup of the best configuration per shape so far" in caplog.text
    a = Archive.open(tmp_path / "s.sqlite", create=False, readonly=True)
    run = a.last_run()
    summary = a.get_state(run["id"], "summary")
    cells = a.count("elites", "run_id = ?", [run["id"]])
    a.close()
    assert run["status"] == "stopped"
    overall = next(r for r in summary if r["bucket"] == "all")
    # results arrive as they finish, not in the order queued: the 3 offered to the cells cover 2 or 3 shapes
    # (a 4th can be recorded by the evaluator and never offered: the interruption lands in between)
    assert overall["shapes"] == 3 and overall["covered"] == cells >= 2 and overall["geomean_speedup"] > 0


def test_stop_signals_are_held_while_the_table_is_written_and_delivered_after():
    """A second Ctrl-C (or `timeout`'s SIGTERM to the process group) during the stopped sweep's table
    waits for the table: it arrives as KeyboardInterrupt once the block ends."""
    import signal
    import threading

    from evo.core.signals import stop_signals_held
    reached_end = False
    # Python's own SIGINT handler for the test: a process started in the background by a shell without
    # job control (`cmd &`, nohup) inherits SIGINT ignored, and an ignored SIGINT raises nothing
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # nor blocked by an inherited mask
    try:
        with pytest.raises(KeyboardInterrupt):
            with stop_signals_held():
                signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # to this thread, noted at once
                for _ in range(1000):  # bytecode boundaries where a delivered signal would raise
                    pass
                reached_end = True
    finally:
        signal.signal(signal.SIGINT, inherited)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
    assert reached_end


def test_an_ignored_stop_signal_stays_ignored_through_the_hold():
    """Where SIGINT is ignored (a background job), holding it changes nothing: it is not raised after."""
    import signal
    import threading

    from evo.core.signals import stop_signals_held
    inherited = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with stop_signals_held():
            signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, inherited)
