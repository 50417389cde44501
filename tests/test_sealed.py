"""Sealed timing's order of work (evo.evaluation.sealed) and the step profiler (evo.evaluation.steps),
on the CPU: fake GPU calls record what is queued and when the host waits."""
import json

import pytest

from evo.evaluation import steps
from evo.evaluation.sealed import contiguous_runs, run_sealed


class FakeOps:
    """Queues 'GPU work' in a log; results are readable only after sync() (as on a real stream).
    Work runs in stream order, so a value copied to the host is the device value at the copy's place
    in the log. With `rogue`, every timed chunk overwrites all verdicts still in device memory with
    'pass' (an untrusted kernel writing out of bounds)."""

    def __init__(self, n=4, ms=2.0, bad=None, full_bad=None, graph=True, rogue=False):
        self.n, self.ms, self.graph, self.rogue = n, ms, graph, rogue
        self.log: list[str] = []
        self.synced_upto = 0  # log entries the 'GPU' has finished
        self.bad = bad or {}  # chunk number (0-based, over the whole run) -> projection error
        self.full_bad = full_bad or {}  # replay number -> elementwise error
        self.chunk = self.replay = 0
        self.device: dict[int, str | None] = {}  # verdicts in device memory, by check number

    def _ready(self, pos):
        assert pos < self.synced_upto, "a result was read before the GPU was waited for"

    def refresh(self):
        self.log.append("refresh")

    def timed_chunk(self):
        self.log.append("timed")
        if self.rogue:
            for k in self.device:
                self.device[k] = None
        pos = len(self.log) - 1
        return lambda: (self._ready(pos), self.ms)[1]

    def check(self):
        self.log.append("check")
        k = self.chunk
        self.device[k] = self.bad.get(k)
        self.chunk += 1
        return k

    def to_host(self, k):
        self.log.append("copy")
        pos, error = len(self.log) - 1, self.device[k]  # the device value when the copy runs
        return lambda: (self._ready(pos), error)[1]

    def full_check(self):
        self.log.append("full")
        self.sync()
        error = self.full_bad.get(self.replay)
        self.replay += 1
        return error

    def sync(self):
        self.log.append("sync")
        self.synced_upto = len(self.log)

    def clock(self):
        return 1980.0, False


def test_every_timed_chunk_is_refreshed_before_and_checked_after():
    ops = FakeOps()
    samples, clocks, error = run_sealed(ops, chunks=3, replays=2, verify=True)
    assert error is None and len(samples) == 2 and len(clocks) == 2
    work = [e for e in ops.log if e != "sync"]
    per_replay = ["refresh", "timed", "check", "copy"] * 3 + ["full"]
    assert work == per_replay * 2
    assert samples == [pytest.approx(3 * 2.0 / (3 * 4))] * 2  # mean ms per launch over the replay's chunks


def test_the_host_waits_once_per_replay_not_once_per_chunk():
    """The chunks of a replay are queued back to back: the GPU never idles while the host checks a
    chunk's verdict (the old loop synchronised after every chunk's check)."""
    ops = FakeOps()
    run_sealed(ops, chunks=20, replays=5, verify=True)
    assert ops.log.count("timed") == 100
    assert ops.log.count("sync") <= 2 * 5  # the elementwise check's wait and the replay's end
    first_sync = ops.log.index("sync")
    assert ops.log[:first_sync].count("timed") == 20  # the whole first replay queued before any wait


def test_the_first_failing_chunk_is_reported_and_timing_stops_after_its_replay():
    ops = FakeOps(bad={4: "set 1 wrong (chunk 4)", 5: "later failure"})
    samples, _, error = run_sealed(ops, chunks=3, replays=5, verify=True)
    assert error == "set 1 wrong (chunk 4)"
    assert len(samples) == 1  # the first replay was clean; the second failed; no third
    assert ops.log.count("timed") == 6


def test_a_projection_failure_comes_before_the_elementwise_one():
    ops = FakeOps(bad={2: "projection"}, full_bad={0: "elementwise"})
    assert run_sealed(ops, chunks=3, replays=2, verify=True)[2] == "projection"
    ops = FakeOps(full_bad={1: "elementwise"})
    samples, _, error = run_sealed(ops, chunks=3, replays=3, verify=True)
    assert error == "elementwise" and len(samples) == 1


def test_each_verdict_is_copied_to_the_host_before_the_next_chunk_launches():
    """A check's verdict leaves device memory (copy queued right after the check, on the same stream)
    before any later chunk's launches run, and is read from that host copy at the replay's end."""
    ops = FakeOps()
    run_sealed(ops, chunks=4, replays=2, verify=True)
    checks = [i for i, e in enumerate(ops.log) if e == "check"]
    assert len(checks) == 8 and ops.log.count("copy") == 8
    for i in checks:
        assert ops.log[i + 1] == "copy"  # nothing (no refresh, no launch) between a check and its copy
    first_sync = ops.log.index("sync")
    assert ops.log[:first_sync].count("copy") == 4  # still no wait per chunk


def test_a_later_kernel_overwriting_device_verdicts_cannot_hide_a_failure():
    """An untrusted kernel of a later chunk that overwrites every verdict left in device memory with
    'pass' cannot hide an earlier chunk's failure: verdicts are read from their host copies."""
    ops = FakeOps(bad={1: "set 2 wrong (chunk 1)"}, rogue=True)
    samples, _, error = run_sealed(ops, chunks=3, replays=2, verify=True)
    assert error == "set 2 wrong (chunk 1)" and samples == []


def test_calls_without_graphs_wait_for_an_idle_gpu_before_each_refresh():
    """Launches issued one by one by the host (libraries timed without graphs): each chunk starts
    from an idle GPU, waited for before its refresh (so the host cannot queue the chunk's launches
    while the refresh runs), never between the refresh and the launches."""
    ops = FakeOps(graph=False)
    run_sealed(ops, chunks=3, replays=2, verify=False)
    refreshes = [i for i, e in enumerate(ops.log) if e == "refresh"]
    assert len(refreshes) == 6
    for i in refreshes:
        assert ops.log[i - 1] == "sync" and ops.log[i + 1] == "timed"
    ops = FakeOps(graph=True)  # a graph: no wait within the replay (the elementwise check's, and the end's)
    run_sealed(ops, chunks=3, replays=2, verify=False)
    assert ops.log.count("sync") == 4


def test_without_verify_the_gpu_does_the_same_work_but_no_verdict_counts():
    """A library (verify=False) gets the same checks between its chunks as a kernel, so that the GPU's
    power state and clock are alike for both (on an H200 they were not: 6-11% on large shapes); their
    verdicts are not read."""
    ops = FakeOps(bad={0: "never looked at"}, full_bad={0: "nor this"})
    samples, _, error = run_sealed(ops, chunks=2, replays=2, verify=False)
    assert error is None and len(samples) == 2
    kernel = FakeOps()
    run_sealed(kernel, chunks=2, replays=2, verify=True)
    assert ops.log == kernel.log


@pytest.mark.parametrize("indices, most, runs", [
    (list(range(10)), 4, [(0, 0, 4), (4, 4, 8), (8, 8, 10)]),
    (list(range(10)), 100, [(0, 0, 10)]),
    ([3], 4, [(0, 3, 4)]),
    ([0, 1, 5, 6, 7, 9], 2, [(0, 0, 2), (2, 5, 7), (4, 7, 8), (5, 9, 10)]),
])
def test_contiguous_runs_cover_every_index_once(indices, most, runs):
    got = contiguous_runs(indices, most)
    assert got == runs
    covered = [i for _, lo, hi in got for i in range(lo, hi)]
    assert covered == indices
    for pos, lo, hi in got:
        assert indices[pos:pos + hi - lo] == list(range(lo, hi)) and hi - lo <= most


def test_steps_are_a_no_op_unless_asked_for(monkeypatch, tmp_path):
    monkeypatch.delenv(steps.ENV_FILE, raising=False)
    calls = []
    s = steps.begin(sync=lambda: calls.append(1))
    with steps.step("anything"):
        pass
    s.write()
    assert not s.enabled and s.times == {} and calls == []


def test_steps_write_one_line_per_evaluation(monkeypatch, tmp_path):
    path = tmp_path / "profile.jsonl"
    monkeypatch.setenv(steps.ENV_FILE, str(path))
    monkeypatch.setenv(steps.ENV_SYNC, "1")
    synced = []
    for shape in ([64, 64, 64], [1, 4096, 4096]):
        s = steps.begin(sync=lambda: synced.append(1))
        run_sealed(FakeOps(), chunks=2, replays=3, verify=True)
        s.note(shape=shape, sets=4, chunks=2)
        s.write()
    lines = [json.loads(ln) for ln in path.read_text().splitlines()]
    assert [ln["shape"] for ln in lines] == [[64, 64, 64], [1, 4096, 4096]]
    st = lines[0]["steps"]
    assert st["timed chunk"]["count"] == 6 and st["refresh"]["count"] == 6
    assert st["check (projection)"]["count"] == 6 and st["check (elementwise) + wait"]["count"] == 3
    assert lines[0]["synced"] is True and len(synced) == 2 * (6 * 3 + 3)  # every step waited for the GPU
    assert all(v["s"] >= 0 for v in st.values()) and lines[0]["total_s"] >= 0



def test_a_replay_slower_than_the_race_limit_is_the_last_and_was_verified_in_full():
    """Racing: a kernel already far slower than its shape's fastest gets one replay, not all; that
    replay is refreshed, timed and checked like any other. Faster than the limit: every replay."""
    ops = FakeOps()  # 2 ms per chunk of 4 launches: 0.5 ms per launch
    samples, _, error = run_sealed(ops, chunks=3, replays=5, verify=True, give_up_ms=0.4)
    assert error is None and samples == [pytest.approx(0.5)]
    assert [e for e in ops.log if e != "sync"] == ["refresh", "timed", "check", "copy"] * 3 + ["full"]
    samples, _, _ = run_sealed(FakeOps(), chunks=3, replays=5, verify=True, give_up_ms=0.6)
    assert len(samples) == 5
    # a failing check in the raced replay is still the error reported
    _, _, error = run_sealed(FakeOps(bad={1: "row 3 wrong"}), chunks=3, replays=5, verify=True, give_up_ms=0.4)
    assert error == "row 3 wrong"
