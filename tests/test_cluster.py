"""Evaluation on a Dask cluster (issue 17), with the simulated backend: a LocalCluster, and a
scheduler plus `dask worker --nthreads 1 --resources GPU=1` processes over loopback.

No assert here depends on timing: a worker is killed only once its jobs are seen on it (a hang
executing, and with the queue on one more job waiting behind it), and a hang lost that way re-runs
as a hang, whose outcome (timeout) does not depend on where it ran."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from evo.config import EvaluatorConfig
from evo.core.errors import ConfigError, GpuUnavailable
from evo.core.kernel import Candidate
from evo.core.shapes import Shape
from evo.evaluation.evaluator import Evaluator, _launch_on
from evo.evaluation.pool import Job, WorkerPool
from evo.families import FAMILIES
from tests.test_evaluation import GOOD, marked
from tests.test_resume import BASE, state, wait_for_evaluations

ROOT = Path(__file__).resolve().parent.parent


# ---- without Dask -------------------------------------------------------------------------------
def test_the_launch_is_computed_for_the_sm_count_of_the_gpu_that_runs_it():
    hopper = FAMILIES["hopper"]
    persistent = next(p for p in hopper.all_valid if p["PERSISTENT"] and p["CTAS_PER_SM"] == 1 and not p["SPLIT_K"] > 1)
    cand, shape = hopper.candidate(persistent), Shape(4096, 4096, 4096)
    h200, smaller = _launch_on(cand, shape, 132), _launch_on(cand, shape, 114)
    assert h200["launch"]["grid"][0] == 132 and smaller["launch"]["grid"][0] == 114
    assert _launch_on(cand, Shape(64, 64, 63), 132)["refuse"]["status"] == "unsupported"


def test_a_job_pinned_to_a_gpu_the_pool_lacks_is_an_error_not_a_wait():
    with WorkerPool(backend="simulated", devices=["sim0"]) as pool:
        with pytest.raises(GpuUnavailable, match="asks for GPU sim7, which this pool does not have"):
            list(pool.run([Job({"op": "peaks"}, device="sim7")]))


def test_a_cluster_without_dask_installed_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # as if not installed
    hint = r"needs Dask .*: pip install 'dask>=[^ ]+' 'distributed>=[^ ]+' 'dask-jobqueue>=[^ ]+' \(evo's `cluster` extra"
    with pytest.raises(ConfigError, match=hint):  # the packages themselves: evo-hgemm is not on PyPI
        Evaluator(EvaluatorConfig(backend="simulated", cluster="local"))


def test_a_cell_compares_speedups_so_kernels_timed_on_different_gpus_compete_fairly(tmp_path):
    from evo.archive import Archive
    from evo.archive.elites import AddStatus, elites, offer
    from evo.core.records import Evaluation, Status, Timing
    shape = Shape(1024, 1024, 1024)

    def timed(kid: str, ms: float, library_ms: float, gpu: str) -> Evaluation:
        t = Timing(mode="rotating", median_ms=ms, spread=0.0, samples_ms=(ms,), launches=1, method="graph")
        return Evaluation(kid, shape, Status.OK, timings=(t,), best_library="torch", best_library_ms=library_ms,
                          backend="gpu", gpu=gpu)

    slow_gpu = timed("b" * 20, 0.020, 0.030, "H100 PCIe [1]")  # 1.5x its GPU's library
    fast_gpu = timed("a" * 20, 0.015, 0.012, "H200 [2]")  # faster in ms, but 0.8x its GPU's library
    for order in ((slow_gpu, fast_gpu), (fast_gpu, slow_gpu)):
        archive = Archive.open(tmp_path / f"{order[0].gpu[:4]}.sqlite")
        run = archive.start_run(kind="search", config={}, seed=0, backend="gpu")
        for e in order:
            offer(archive, run, str(shape), e)
        (elite,) = elites(archive, run)
        assert elite["kernel_id"] == "b" * 20 and elite["speedup"] == pytest.approx(1.5)
        same = timed("c" * 20, 0.020, 0.030, "H100 PCIe [1]")  # a tie: the smaller kernel id stands
        assert offer(archive, run, str(shape), same) == AddStatus.NOT_ADDED
        archive.close()


distributed = pytest.importorskip("distributed")
psutil = pytest.importorskip("psutil")  # a dependency of distributed


# ---- a LocalCluster -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def local(compile_cache):
    cfg = EvaluatorConfig(backend="simulated", timeout_s=2, cache_dir=str(compile_cache), cluster="local",
                          cluster_workers=2)
    ev = Evaluator(cfg).start()
    yield ev
    ev.close()


def test_the_containment_matrix_holds_on_a_local_cluster_and_jobs_use_both_workers(local, caplog):
    s = Shape(256, 256, 1024)
    good = Candidate.make(GOOD)
    pairs = [(marked("hang"), s), (good, s), (marked("fault"), s), (good, Shape(128, 128, 128)),
             (marked("crash"), s), (good, Shape(64, 64, 64)), (marked("fp16acc"), s), (marked("stateful"), s)]
    before = local.pool.restarts
    out = {(e.kernel_id, e.shape): e for e in local.evaluate(pairs)}
    assert [str(out[(c.id, s)].status) for c, s in pairs] == ["timeout", "ok", "fault", "ok", "fault", "ok", "incorrect",
                                                              "incorrect_after_timing"]
    assert local.pool.restarts - before == 4  # hang, fault, the crash twice: all on the GPU processes' hosts
    assert local.pool.reruns == 0  # no Dask worker was lost: nothing went elsewhere
    assert len({e.gpu for e in out.values() if e.gpu}) == 2
    assert all(e.speedup for e in out.values() if e.ok)  # baselines per GPU, measured where each kernel ran


def _daemonic() -> bool:
    import multiprocessing
    return multiprocessing.current_process().daemon


def test_a_local_gpu_cluster_gives_each_worker_its_own_gpu_and_lets_it_start_processes(monkeypatch):
    from evo.evaluation.dask_pool import start_local_cluster
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")  # what this machine would see with two GPUs
    with start_local_cluster("gpu") as cluster, distributed.Client(cluster, set_as_default=False) as client:
        gpus, daemonic = client.run(os.getenv, "CUDA_VISIBLE_DEVICES"), client.run(_daemonic)
        resources = {w["resources"]["GPU"] for w in client.scheduler_info()["workers"].values()}
    assert sorted(gpus.values()) == ["0", "1"] and not any(daemonic.values()) and resources == {1}


# ---- a scheduler and worker processes over loopback ---------------------------------------------
def _dask(*args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "dask", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env, start_new_session=True)


def _until(condition, what: str, timeout: float = 60):
    """Wait for a condition (not for time): returns its first truthy value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"not seen within {timeout} s: {what}")


def _executing(dask_worker=None) -> list[str]:
    return [str(k) for k, ts in dask_worker.state.tasks.items() if ts.state == "executing"]


@pytest.fixture(scope="module")
def loopback(tmp_path_factory):
    here = tmp_path_factory.mktemp("dask")
    scheduler_file = here / "scheduler.json"
    # workers must not be daemonic (they start a GPU process); tests/ importable for client.run
    env = {**os.environ, "DASK_DISTRIBUTED__WORKER__DAEMON": "False", "PYTHONPATH": str(ROOT)}
    procs = [_dask("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file",
                   str(scheduler_file), env=env)]

    def worker(name: str) -> subprocess.Popen:
        p = _dask("worker", "--scheduler-file", str(scheduler_file), "--nthreads", "1", "--resources", "GPU=1",
                  "--name", name, "--host", "127.0.0.1", "--no-dashboard", env=env)
        procs.append(p)
        return p

    try:
        _until(lambda: scheduler_file.exists() and scheduler_file.read_text().strip(), "the scheduler file")
        address = json.loads(scheduler_file.read_text())["address"]
        worker("w0"), worker("w1")
        client = distributed.Client(address, timeout=60, set_as_default=False)
        client.wait_for_workers(2, timeout=60)
        yield SimpleNamespace(address=address, client=client, worker=worker, tmp=here)
        client.close()
    finally:
        for p in procs:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def _request(behaviour: str) -> dict:
    source = marked(behaviour).source
    return {"op": "evaluate", "shape": [128, 128, 128], "cubin": None, "source": source, "launch": None, "draws": 1,
            "modes": ["rotating"], "replays": 1, "target_replay_ms": 1.0, "server_gap_ms": [0.05], "libraries": []}


def _held(dask_worker=None) -> dict[str, str]:
    """The jobs this worker holds, by key: executing, or waiting there for its GPU."""
    return {str(k): ts.state for k, ts in dask_worker.state.tasks.items() if str(k).startswith("evo-job-")}


def _tagged(pool) -> dict[str, object]:
    """Records which job each key sent by `pool` carries: task key -> job tag."""
    keys: dict[str, object] = {}
    submit = pool._submit

    def recorded(job, workers):
        future = submit(job, workers)
        keys[future.key] = job.tag
        return future

    pool._submit = recorded
    return keys


def test_with_a_queue_a_worker_holds_its_next_job_before_the_first_finishes(loopback):
    from evo.evaluation.dask_pool import DaskPool
    client = loopback.client
    with DaskPool(loopback.address, backend="simulated", stage_timeout_s=3, queue=1) as pool:
        keys, seen = _tagged(pool), {}

        def jobs():
            yield Job(_request("hang"), tag="a")
            yield Job(_request("hang"), tag="b")
            yield Job(_request("incorrect"), tag="c")  # both GPUs busy: it waits on a worker, not in the driver
            seen.update(_until(lambda: _both_busy_and_one_waiting(client), "c waiting on a worker behind a hang"))

        replies = {job.tag: reply for job, reply in pool.run(jobs())}
    assert sorted(replies) == ["a", "b", "c"] and pool.reruns == 0
    (waiting,) = [k for held in seen.values() for k, state in held.items() if state != "executing"]
    assert keys[waiting] == "c"  # sent to its worker while both hangs still ran there


def _both_busy_and_one_waiting(client) -> dict[str, dict[str, str]] | None:
    held = {a: h for a, h in client.run(_held).items() if h}
    states = sorted(state for h in held.values() for state in h.values())
    return held if len(held) == 2 and states.count("executing") == 2 and len(states) == 3 else None


def test_a_lost_worker_loses_only_its_jobs_which_run_once_more_and_the_run_finishes(loopback):
    """With the queue on, the killed worker holds two jobs (one running, one waiting): exactly those
    two run again, once each; the one that only waited keeps its re-run (it never started)."""
    from evo.evaluation.dask_pool import DaskPool
    client = loopback.client
    # the kill must come before the running hang times out (or the waiting job would be running):
    # 5 s leaves room for a loaded machine between the snapshot and the kill
    with DaskPool(loopback.address, backend="simulated", stage_timeout_s=5, queue=1) as pool:
        keys, killed, lost = _tagged(pool), [], []

        def jobs():
            yield Job(_request("hang"), tag="hang-a")
            yield Job(_request("hang"), tag="hang-b")
            yield Job(_request("incorrect"), tag="queued")
            held = _until(lambda: _both_busy_and_one_waiting(client), "two hangs running, one job waiting")
            (address,) = [a for a, h in held.items() if len(h) == 2]  # the worker holding two jobs
            lost.extend(keys[k] for k in held[address])
            pid = client.run(os.getpid, workers=[address])[address]
            killed.extend(c for c in psutil.Process(pid).children() if "spawn_main" in " ".join(c.cmdline()))
            os.kill(pid, signal.SIGKILL)  # the Dask worker process; its nanny starts a new one (it joins mid-run)
            for i in range(6):
                yield Job(_request("slow" if i % 2 else "incorrect"), tag=i)

        out = list(pool.run(jobs()))
        replies = {job.tag: reply for job, reply in out}
        assert sorted(replies, key=str) == [0, 1, 2, 3, 4, 5, "hang-a", "hang-b", "queued"]  # nothing lost
        assert len(out) == 9  # and each yielded once
        assert "queued" in lost and len(lost) == 2  # a hang running and the job waiting behind it
        assert sorted(job.tag for job, _ in out if job.attempts or job.lost_waiting) == sorted(lost)  # those re-ran
        (running,) = [t for t in lost if t != "queued"]
        assert [(job.attempts, job.lost_waiting) for job, _ in out if job.tag in (running, "queued")] in (
            [(1, 0), (0, 1)], [(0, 1), (1, 0)])  # the running one used its re-run, the waiting one did not
        assert pool.reruns == 2  # once each
        assert [replies[t]["kernel"]["status"] for t in ("hang-a", "hang-b")] == ["timeout"] * 2  # ran (again), hung
        assert replies["queued"]["kernel"]["status"] == "incorrect"
        assert [replies[i]["kernel"]["status"] for i in range(6)] == ["incorrect", "ok"] * 3
    (hung,) = killed  # the lost worker's GPU process, in the middle of its hang: it went with its worker
    assert psutil.wait_procs([hung], timeout=30)[1] == []


def test_a_worker_that_joins_mid_run_gets_work(loopback, compile_cache):
    cfg = EvaluatorConfig(backend="simulated", timeout_s=5, cache_dir=str(compile_cache), cluster=loopback.address)
    ev = Evaluator(cfg).start()
    asked: list = []
    try:
        first = {e.gpu for e in ev.evaluate([(Candidate.make(GOOD), Shape(64, 64, 64))])}
        separate = ev.pool.call_each
        ev.pool.call_each = lambda *a, **k: asked.append(a) or separate(*a, **k)  # type: ignore[method-assign]
        loopback.worker("late")
        names = lambda: {w["name"] for w in loopback.client.scheduler_info()["workers"].values()}  # noqa: E731
        _until(lambda: names() == {"w0", "w1", "late"}, "the new worker (and any worker restarted before)")
        slow = [marked(f"slow\n// {i}") for i in range(3)]  # one per worker: three idle workers, three jobs
        for c in slow:  # compiled first, so the three jobs are ready together (not spread over compile times)
            ev.prepare(c).result()
        gpus = {e.gpu for e in ev.evaluate([(c, Shape(128, 128, 128)) for c in slow])}
    finally:
        ev.close()
    assert len(first) == 1 and any("dask-late" in g for g in gpus)
    assert any("dask-late" in key for key in ev._peaks)  # its peaks were measured when it joined,
    assert asked == []  # beside its first job: no separate call waited behind a job queued there


def test_a_killed_driver_is_resumed_on_the_same_cluster(loopback):
    path = loopback.tmp / "resume.sqlite"
    cluster = f"evaluator.cluster={loopback.address}"
    run = subprocess.Popen([sys.executable, "-m", "evo", "run", *BASE, cluster, "search.max_evaluations=100000",
                            f"archive.path={path}"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    try:
        wait_for_evaluations(path, 6, run)
    finally:
        os.killpg(run.pid, signal.SIGKILL)  # the driver: the cluster and its workers carry on
        run.wait()
    assert state(path)["status"] == "running"
    out = subprocess.run([sys.executable, "-m", "evo", "resume", str(path), "search.max_evaluations=16"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    after = state(path)
    assert after["status"] == "finished" and after["spent"] >= 16
    assert f"Dask scheduler {loopback.address}" in (loopback.tmp / "resume.run1.log").read_text()


@pytest.mark.filterwarnings("ignore:Port 8787 is already in use")  # the example's dashboard port, taken here
def test_the_slurm_example_asks_for_one_gpu_and_one_non_daemonic_worker_per_job(capsys):
    pytest.importorskip("dask_jobqueue")
    from evo.cli.main import main
    main(["cluster", str(ROOT / "conf" / "cluster" / "slurm.yaml"), "--job-script"])
    script = capsys.readouterr().out
    assert "#SBATCH --gres=gpu:1" in script and "export DASK_DISTRIBUTED__WORKER__DAEMON=False" in script
    worker = next(line for line in script.splitlines() if "dask_worker" in line)
    assert "--nthreads 1" in worker and "--resources GPU=1" in worker



def test_a_batch_cluster_is_refused_where_its_submit_command_is_missing(tmp_path, monkeypatch):
    from evo.core.errors import ConfigError
    from evo.evaluation.jobqueue import check_submit
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ConfigError, match="`sbatch` is not on PATH: run `evo cluster` on a SLURM login node"):
        check_submit({"kind": "slurm", "jobs": 1, "options": {}})
    fake = tmp_path / "sbatch"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    check_submit({"kind": "slurm", "jobs": 1, "options": {}})  # found: no error


def test_a_missing_cluster_description_points_at_the_installed_example(tmp_path):
    """Outside the checkout `conf/cluster/slurm.yaml` does not exist: the error names the copy installed with evo."""
    from pathlib import Path

    from evo.core.errors import ConfigError
    from evo.evaluation.jobqueue import read_spec
    with pytest.raises(ConfigError) as info:
        read_spec(tmp_path / "slurm.yaml")
    example = str(info.value).rsplit(": ", 1)[1].rstrip(")")
    assert Path(example).is_file() and read_spec(example)["kind"] == "slurm"
