"""Browse, report and ship: evo archive, serve (Datasette over HTTP), report, export, dispatch."""
import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from evo.archive import Archive
from evo.cli import main
from evo.cli.hydra_app import compose
from evo.cli.tables import format_table
from evo.core.errors import EvoError
from evo.report import report
from evo.search import run_search

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def run_archive(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("browse")
    c, raw = compose(["evaluator=simulated", "shapes=inline", "shapes.list=[64x64x64,1024x1024x1024,77x4096x4096,129x4095x64]",
                      "search.max_evaluations=30", "islands.n=2", "islands.population=4", "search.children_per_island=4",
                      "llm=none", "search.progress=false", f"archive.path={tmp / 'r.sqlite'}"])
    run_search(c, raw)
    return tmp / "r.sqlite"


def evo(*args):
    out = subprocess.run([sys.executable, "-m", "evo", *args], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def test_archive_commands(run_archive):
    runs = json.loads(evo("archive", "runs", "--json", str(run_archive)))
    assert runs[0]["kind"] == "search" and runs[0]["evaluations"] >= 30
    elites = json.loads(evo("archive", "elites", "--json", str(run_archive)))
    assert {e["cell"] for e in elites} == {"64x64x64", "1024x1024x1024", "77x4096x4096", "129x4095x64"}
    assert all(e["speedup"] > 0 and set(e["libraries"]) == {"torch", "cublaslt_heuristic", "cublaslt_autotuned"}
               for e in elites)
    for e in elites:  # the rate, and the clock beside the fastest library's (simulated: neither read)
        assert e["tflops"] == pytest.approx(2 * e["M"] * e["N"] * e["K"] / e["time_ms"] / 1e9)
        assert e["clock_mhz"] is None and e["library_clock_mhz"] is None
    table = evo("archive", "elites", str(run_archive))
    assert "MODELLED" in table and "x_torch" in table and "TFLOP/s" in table and "lib MHz" in table
    with_genes = evo("archive", "elites", "--params", str(run_archive))
    assert "genes (besides the family default)" in with_genes and "genes" not in table
    from evo.cli.browse import genes_apart_from_default
    hopper = '{"BM": 64, "BN": 192, "CONSUMERS": 1}'
    assert genes_apart_from_default("hopper", hopper).split() == ["BM=64", "BN=192", "CONSUMERS=1"]
    assert genes_apart_from_default(None, "{}") == "-"
    kid = elites[0]["kernel_id"]
    shown = evo("archive", "show", str(run_archive), kid[:10])
    assert kid in shown and "extern \"C\" __global__" in shown and "registers" in shown and "MODELLED" in shown
    lineage = json.loads(evo("archive", "lineage", "--json", str(run_archive), kid))
    assert lineage[0]["kernel_id"] == kid and lineage[0]["backend"] == "simulated"
    # the best over every shape the kernel ran on, and which shape that was
    assert lineage[0]["best_speedup"] >= max(e["speedup"] for e in elites if e["kernel_id"] == kid)
    M, N, K = map(int, lineage[0]["best_on"].split("x"))
    from evo.archive import Archive
    ran = Archive.open(run_archive, readonly=True).db.query(
        "select speedup from evaluations where kernel_id = ? and M = ? and N = ? and K = ?", [kid, M, N, K])
    assert lineage[0]["best_speedup"] in {r["speedup"] for r in ran}
    assert "MODELLED" in evo("archive", "lineage", str(run_archive), kid)  # its speedups are modelled too
    other = elites[1]["kernel_id"]
    assert evo("archive", "diff", str(run_archive), kid, other).startswith("---") or kid == other
    json.loads(evo("archive", "failures", "--json", str(run_archive)))
    assert json.loads(evo("archive", "--json", "elites", str(run_archive))) == elites  # --json before the command
    assert json.loads(evo("archive", "llm", "--json", str(run_archive)))["calls"] == []


def test_report_has_every_plot_and_says_it_is_simulated(run_archive, tmp_path):
    evo("report", str(run_archive), "--out", str(tmp_path / "rep"))
    page = (tmp_path / "rep" / "report.html").read_text()
    pngs = sorted(p.name for p in (tmp_path / "rep").glob("*.png"))
    assert pngs == ["best_so_far.png", "coverage.png", "failures.png", "operator_probabilities.png",
                    "speedup_by_bucket.png", "speedup_maps.png"]
    assert page.count("data:image/png;base64,") == 6 and "modelled by the CPU test double" in page
    assert "(SIMULATED)</title>" in page and "Throttling:" not in page  # no GPU, no clocks to speak of
    assert "<td>&lt;1 GFLOP</td>" in page and "<h2>speedup maps</h2>" in page  # autoescaped, titled
    elites = json.loads(evo("archive", "elites", "--json", str(run_archive)))
    for e in elites:
        assert f"<td>{e['time_ms'] * 1e3:.2f}</td><td>{e['speedup']:.3f}</td>" in page


def test_a_simulated_runs_figures_say_so_on_their_face(run_archive, tmp_path, monkeypatch):
    """Each PNG is stamped SIMULATED across its top (a figure copied out of the page still says so)."""
    import evo.report
    stamped = {}
    real = evo.report._save

    def save(fig, path, stamp, **kw):
        real(fig, path, stamp, **kw)
        stamped[Path(path).name] = [t.get_text() for t in fig.texts]

    monkeypatch.setattr(evo.report, "_save", save)
    report(str(run_archive), out=str(tmp_path / "rep"))
    assert len(stamped) == 6 and all(evo.report.SIMULATED_STAMP in texts for texts in stamped.values())


@pytest.mark.parametrize("missing", ["matplotlib", "jinja2"])
def test_report_without_the_report_extra_says_in_one_line_what_to_install(run_archive, tmp_path, monkeypatch,
                                                                           capsys, missing):
    monkeypatch.setitem(sys.modules, missing, None)  # `import <missing>` now raises ImportError
    out = tmp_path / "rep"
    with pytest.raises(EvoError) as raised:
        report(str(run_archive), out=str(out))
    message = str(raised.value)
    # the packages themselves (evo-hgemm is not on PyPI), as pip takes them, and the checkout's form
    assert "\n" not in message and "pip install 'matplotlib>=3.8' 'jinja2>=3.1'" in message
    assert "evo-hgemm[" not in message and message.endswith("in evo's checkout: pip install -e '.[report]')")
    assert {"matplotlib" in message, "Jinja2" in message} == {True}
    assert not out.exists()
    evo_log = logging.getLogger("evo")  # main() configures it, and SIGPIPE: put them back afterwards
    saved = evo_log.handlers[:], evo_log.level, evo_log.propagate
    sigpipe = signal.getsignal(signal.SIGPIPE)  # left at SIG_DFL, a later write to a closed socket kills pytest
    try:
        with pytest.raises(SystemExit) as exited:
            main(["report", str(run_archive), "--out", str(out)])
    finally:
        evo_log.handlers[:], evo_log.propagate = saved[0], saved[2]
        evo_log.setLevel(saved[1])
        signal.signal(signal.SIGPIPE, sigpipe)
    assert exited.value.code == 2
    assert capsys.readouterr().err == f"evo: error: {message}\n"
    assert not out.exists()


def test_format_table_formats_values_and_aligns_numbers_right():
    rows = [{"kernel": "abc", "n": 7, "t": 0.123456, "big": 123456.7, "none": None},
            {"kernel": "  def", "n": 1234, "t": None, "big": 3.0, "none": None}]
    lines = format_table(rows, ["kernel", "n", "t", "big", "none"], ["kernel", "count", "t", "big", "none"]).splitlines()
    assert len(lines) == 4
    assert lines[0].split() == ["kernel", "count", "t", "big", "none"] and set(lines[1]) == {"-", " "}
    assert lines[2].split() == ["abc", "7", "0.1235", "123457", "-"]
    assert lines[3].startswith("  def") and lines[3].split() == ["def", "1234", "-", "3", "-"]
    assert lines[2].index("7") == lines[3].index("4")  # numbers right-aligned


def test_export_writes_sources_cubins_and_a_manifest(run_archive, tmp_path):
    evo("export", str(run_archive), "--out", str(tmp_path / "exp"))
    manifest = json.loads((tmp_path / "exp" / "manifest.json").read_text())
    assert manifest["format"] == "evo-export/2" and manifest["backend"] == "simulated" and "warning" in manifest
    assert len(manifest["kernels"]) == 4
    for k in manifest["kernels"]:
        assert (tmp_path / "exp" / k["file"]).read_text().count("hgemm") >= 1
        assert (tmp_path / "exp" / k["cubin"]).read_bytes()[:4] == b"\x7fELF"
        assert k["entry"] == "hgemm" and len(k["grid"]) == 3 and len(k["block"]) == 3 and k["smem"] >= 0
        assert "-gencode=arch=compute_90a,code=sm_90a" in k["nvcc_flags"]
        assert k["pdl"] is True  # every family's kernel waits for the previous grid first (its PTX says so)
        assert k["time_ms"] > 0 and set(k["library_ms"]) == {"torch", "cublaslt_heuristic", "cublaslt_autotuned"}
        assert k["backend"] == "simulated"  # each entry says its times are modelled
        for t in k["tensor_maps"]:
            assert set(t) >= {"operand", "dims", "box", "swizzle"}
    from evo.dispatch import Dispatcher
    d = Dispatcher(tmp_path / "exp")
    assert (77, 4096, 4096) in d.entries


def test_failures_counts_children_that_never_reached_the_evaluator(run_archive, tmp_path):
    import shutil
    path = tmp_path / "f.sqlite"
    shutil.copy(run_archive, path)
    a = Archive.open(path)
    run = a.last_run("search")["id"]
    state = a.get_state(run, "search")
    a.put_state(run, "search", dict(state, failures={"unsupported_child": 7, "operator_failed": 2}))
    a.close()
    shown = evo("archive", "failures", str(path))
    assert "never reached the evaluator" in shown and "unsupported_child 7, operator_failed 2" in shown
    assert isinstance(json.loads(evo("archive", "failures", "--json", str(path))), list)


def _free_port() -> int:
    """A loopback port nothing listens on (the kernel's pick, released at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def _alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie (Linux /proc)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _children(pid: int) -> list[int]:
    """The live processes whose parent is `pid` (Linux /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid and fields[0] not in ("Z", "X"):
            found.append(int(stat.parent.name))
    return found


linux_only = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc (Linux)")


@contextlib.contextmanager
def _serving(archive, tmp_path):
    """`evo archive serve` on a free loopback port, with its temporary files under tmp_path/"tmp";
    yields (process, port, Datasette's pid, log path) once it says it is serving. Whatever the test
    does, nothing it started outlives it: evo is stopped (killed, with Datasette, if it must be)."""
    port, tmp, log_path = _free_port(), tmp_path / "tmp", tmp_path / "serve.log"
    tmp.mkdir(exist_ok=True)
    with open(log_path, "w") as log_file:
        proc = subprocess.Popen([sys.executable, "-m", "evo", "archive", "serve", str(archive), "--port", str(port)],
                                stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "TMPDIR": str(tmp)})
    started: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while "read-only on http://" not in log_path.read_text():
            assert proc.poll() is None, log_path.read_text()
            assert time.monotonic() < deadline, "evo archive serve did not start within 60 s"
            time.sleep(0.05)
        started = _children(proc.pid)
        assert len(started) == 1, started  # Datasette
        yield proc, port, started[0], log_path
    finally:
        if proc.poll() is None:  # the test ended early: stop it as a user would, then make sure
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                started += _children(proc.pid)
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        for pid in started:
            with contextlib.suppress(OSError):
                if _alive(pid) and b"datasette" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    os.kill(pid, signal.SIGKILL)


def _stop(proc, sig=signal.SIGTERM) -> int:
    """Send `sig` to evo alone (not its group): evo must pass it on to Datasette."""
    os.kill(proc.pid, sig)
    return proc.wait(timeout=30)


@linux_only
def test_datasette_serves_the_archive_read_only(run_archive, tmp_path):
    pytest.importorskip("datasette")
    with _serving(run_archive, tmp_path) as (proc, port, datasette_pid, log_path):
        base = f"http://127.0.0.1:{port}"
        # "serving" is said only once the server answers: no waiting here
        assert json.load(urllib.request.urlopen(base + "/-/versions.json", timeout=10))["datasette"]
        db = run_archive.stem
        rows = json.load(urllib.request.urlopen(f"{base}/{db}/elites.json?_shape=array", timeout=10))
        assert len(rows) == 4 and {"cell", "speedup", "kernel_id"} <= set(rows[0])
        meta = json.load(urllib.request.urlopen(f"{base}/-/metadata.json", timeout=10))
        assert "evaluations" in meta["databases"][db]["tables"]
        assert meta["title"] == "evo archive (SIMULATED: run 1)" and meta["description"].startswith("SIMULATED")
        throttled = json.load(urllib.request.urlopen(f"{base}/{db}/throttled.json?_shape=array", timeout=10))
        assert throttled == [{"run_id": 1, "evaluations": Archive.open(run_archive).count("evaluations"),
                              "throttled": 0, "correct_and_throttled": 0}]
        tables = json.load(urllib.request.urlopen(f"{base}/{db}.json", timeout=10))
        assert "kernels" in [t["name"] for t in tables["tables"]]
        with pytest.raises(urllib.error.HTTPError):  # read-only SQL only: no writes
            urllib.request.urlopen(urllib.request.Request(f"{base}/{db}/-/query",
                                                          data=b"sql=delete+from+runs", method="POST"), timeout=10)
        assert Archive.open(run_archive).count("runs") == 1
        assert _stop(proc) == 0
        assert not _alive(datasette_pid) and not _answers(port)
        assert list((tmp_path / "tmp").iterdir()) == []


@linux_only
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_to_serve_stops_datasette_and_leaves_nothing_behind(tmp_path, sig):
    pytest.importorskip("datasette")
    Archive.open(tmp_path / "a.sqlite").close()
    with _serving(tmp_path / "a.sqlite", tmp_path) as (proc, port, datasette_pid, log_path):
        assert _alive(datasette_pid) and _answers(port)
        assert _stop(proc, sig) == 0, log_path.read_text()
        assert not _alive(datasette_pid)
        assert not _answers(port)  # nothing listens on the port any more
        assert list((tmp_path / "tmp").iterdir()) == []  # the metadata folder is gone
        assert "stopped Datasette on port" in log_path.read_text()


def test_serve_on_a_busy_port_says_so_in_one_line_and_exits_2(tmp_path):
    pytest.importorskip("datasette")
    Archive.open(tmp_path / "a.sqlite").close()
    (tmp_path / "tmp").mkdir()
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = subprocess.run([sys.executable, "-m", "evo", "archive", "serve", str(tmp_path / "a.sqlite"),
                              "--port", str(port)], capture_output=True, text=True, timeout=120,
                             env={**os.environ, "TMPDIR": str(tmp_path / "tmp")})
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == (f"evo: error: port {port} on 127.0.0.1 is already in use: stop what listens there, "
                          f"or choose another port with --port\n")
    assert list((tmp_path / "tmp").iterdir()) == []


def test_serve_says_so_and_exits_2_when_datasette_does_not_start(tmp_path):
    pytest.importorskip("datasette")
    Archive.open(tmp_path / "a.sqlite").close()
    (tmp_path / "tmp").mkdir()
    fake = tmp_path / "bin" / "datasette"  # found on PATH before the real one
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho 'datasette: cannot start (fake)' >&2\nexit 3\n")
    fake.chmod(0o755)
    port = _free_port()
    out = subprocess.run([sys.executable, "-m", "evo", "archive", "serve", str(tmp_path / "a.sqlite"),
                          "--port", str(port)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "TMPDIR": str(tmp_path / "tmp"),
                              "PATH": f"{fake.parent}{os.pathsep}{os.environ['PATH']}"})
    assert out.returncode == 2 and "read-only on http" not in out.stderr + out.stdout
    assert out.stderr.splitlines() == ["datasette: cannot start (fake)",
                                       f"evo: error: Datasette exited (status 3) before serving on port {port}: "
                                       f"its messages are above"]
    assert list((tmp_path / "tmp").iterdir()) == []


def test_the_cost_prior_reads_gzipped_archives_as_the_plain_ones(run_archive, tmp_path):
    """benchmarks/ keeps archives gzipped: `python -m evo.search.cost_prior` reads them as they are."""
    import gzip
    import shutil

    from evo.search.cost_prior import rows_from_archive
    packed = tmp_path / "a.sqlite.gz"
    with open(run_archive, "rb") as src, gzip.open(packed, "wb") as dst:
        shutil.copyfileobj(src, dst)
    plain = rows_from_archive(run_archive)
    assert plain and [(k, s, y) for k, _, s, y in rows_from_archive(packed)] == [(k, s, y) for k, _, s, y in plain]


def test_an_install_hint_names_each_extras_packages_from_the_installed_metadata():
    import tomllib

    from evo.core.extras import extra_requirements, install_hint
    extras = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extra_requirements("cluster") == extras["cluster"] and len(extras["cluster"]) == 3
    assert install_hint("gpu").startswith("pip install " + " ".join(f"'{r}'" for r in extras["gpu"]) + " (evo's `gpu` extra")
    assert extra_requirements("no-such-extra") == [] and install_hint("no-such-extra").startswith("in evo's checkout")
