import sqlite3
from pathlib import Path

import pytest

from evo.archive import SCHEMA_VERSION, Archive
from evo.archive.schema import MIGRATIONS
from evo.core.errors import ArchiveError

TABLES = {"runs", "kernels", "lineage", "compiles", "evaluations", "baselines", "device_peaks", "elites",
          "elite_history", "llm_calls", "policy_state", "island_state", "run_state", "meta", "migrations"}


def test_new_archive_has_every_table_and_wal(tmp_path):
    a = Archive.open(tmp_path / "a.sqlite")
    assert TABLES <= set(a.db.table_names())
    assert a.schema_version == SCHEMA_VERSION
    assert a.db.execute("pragma journal_mode").fetchone()[0] == "wal"


def test_a_closed_archive_is_one_file_that_readers_leave_alone(tmp_path):
    path = tmp_path / "a.sqlite"
    writer = Archive.open(path)
    run = writer.start_run(kind="search", config={}, seed=0, backend="simulated")
    reader = Archive.open(path, readonly=True)
    writer.insert("evaluations", {"run_id": run, "kernel_id": "k", "M": 1, "N": 2, "K": 3, "status": "ok"})
    writer.close()  # a reader still has it open: it stays WAL, and the reader sees the row
    assert reader.count("evaluations") == 1 and reader.db.execute("pragma journal_mode").fetchone()[0] == "wal"
    reader.close()
    Archive.open(path).close()  # the last connection: back to a rollback journal, one file
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.sqlite"]
    browse = Archive.open(path, readonly=True)
    assert browse.count("evaluations") == 1
    browse.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.sqlite"]  # no -wal, no -shm beside it
    again = Archive.open(path)  # writing again: WAL again
    assert again.db.execute("pragma journal_mode").fetchone()[0] == "wal"
    again.close()


def test_runs_and_counts(tmp_path):
    a = Archive.open(tmp_path / "a.sqlite")
    run = a.start_run(kind="search", config={"x": 1}, seed=3, backend="simulated")
    a.insert("evaluations", {"run_id": run, "kernel_id": "k", "M": 1, "N": 2, "K": 3, "status": "ok"})
    (row,) = a.runs()
    assert row["id"] == run and row["evaluations"] == 1 and row["correct"] == 1 and row["status"] == "running"
    a.set_run_status(run, "stopped")
    assert a.run(run)["status"] == "stopped"
    with pytest.raises(ArchiveError, match="no run 99"):
        a.run(99)


def test_transactions_roll_back_together(tmp_path):
    a = Archive.open(tmp_path / "a.sqlite")
    with pytest.raises(RuntimeError):
        with a.transaction():
            a._insert("run_state", {"run_id": 1, "key": "a", "value_json": "1"})
            a._insert("run_state", {"run_id": 1, "key": "b", "value_json": "2"})
            raise RuntimeError("crash in the middle")
    assert a.count("run_state") == 0
    a.put_state(1, "rng", [1, 2, 3])
    assert Archive.open(tmp_path / "a.sqlite").get_state(1, "rng") == [1, 2, 3]


def test_older_archive_is_migrated(tmp_path):
    path = tmp_path / "old.sqlite"
    Archive.open(path, migrations=MIGRATIONS[:1]).close()

    def add_notes(db):
        db["runs"].add_column("notes", str)

    a = Archive.open(path, migrations=MIGRATIONS + [("run notes", add_notes)])
    assert a.schema_version == len(MIGRATIONS) + 1
    assert "notes" in a.db["runs"].columns_dict
    assert [r["name"] for r in a.db.query("select name from migrations order by version")] == \
        [m[0] for m in MIGRATIONS] + ["run notes"]


def test_newer_archive_is_refused(tmp_path):
    path = tmp_path / "new.sqlite"
    Archive.open(path).db.execute("update meta set value = '999' where key = 'schema_version'")
    with pytest.raises(ArchiveError, match="newer evo"):
        Archive.open(path)


def test_foreign_sqlite_file_is_refused(tmp_path):
    path = tmp_path / "other.sqlite"
    con = sqlite3.connect(path)
    con.execute("create table t (x)")
    con.commit()
    con.close()
    with pytest.raises(ArchiveError, match="not an evo archive"):
        Archive.open(path)


def test_missing_archive_without_create(tmp_path):
    with pytest.raises(ArchiveError, match="no archive"):
        Archive.open(tmp_path / "nope.sqlite", create=False)


def _open_and_count(path: str, create: bool) -> str:
    try:
        a = Archive.open(path, create=create)
        n = a.count("runs")
        a.close()
        return f"ok {n}"
    except Exception as e:  # the test reports every failure with its text
        return f"{type(e).__name__}: {e}"


def test_two_processes_opening_a_new_archive_at_once_both_succeed(tmp_path):
    """One creates the file while the other opens it: the schema is created exactly once (the version
    is read and the migrations applied under one write lock)."""
    import concurrent.futures as cf
    import multiprocessing as mp
    ctx = mp.get_context("spawn")
    with cf.ProcessPoolExecutor(4, mp_context=ctx) as pool:
        for trial in range(12):
            path = str(tmp_path / f"race{trial}.sqlite")
            futures = [pool.submit(_open_and_count, path, True) for _ in range(4)]
            results = [f.result() for f in futures]
            assert results == ["ok 0"] * 4, results
            assert Archive.open(path).schema_version == SCHEMA_VERSION


def test_a_gzipped_archive_is_read_as_it_is_and_refused_for_writing(tmp_path):
    """benchmarks/ keeps archives gzipped: browsing, export and bench read `.sqlite.gz` directly (from a
    temporary plain copy that closing removes); writing one is refused with the way to a plain copy."""
    import gzip
    import shutil
    path = tmp_path / "a.sqlite"
    a = Archive.open(path)
    run = a.start_run(kind="sweep", config={"x": 1}, seed=0, backend="simulated")
    a.close()
    with open(path, "rb") as src, gzip.open(tmp_path / "a.sqlite.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    g = Archive.open(tmp_path / "a.sqlite.gz", readonly=True)
    copy = Path(g._unpacked.name)
    assert g.path == tmp_path / "a.sqlite.gz" and [r["id"] for r in g.runs()] == [run]
    g.close()
    assert not copy.exists()
    with pytest.raises(ArchiveError, match="gunzip -k"):
        Archive.open(tmp_path / "a.sqlite.gz")
    (tmp_path / "bad.sqlite.gz").write_bytes(b"not gzip at all")
    with pytest.raises(ArchiveError, match="cannot read .*bad.sqlite.gz as a gzipped archive"):
        Archive.open(tmp_path / "bad.sqlite.gz", readonly=True)
    with gzip.open(tmp_path / "empty.sqlite.gz", "wb") as f:
        f.write(b"")
    with pytest.raises(ArchiveError, match=r"empty.sqlite.gz is empty") as e:
        Archive.open(tmp_path / "empty.sqlite.gz", readonly=True)
    assert "evo-archive-" not in str(e.value)  # the message names the user's file, not the temporary copy
    from evo.core.errors import EvoError
    from evo.serve import serve
    with pytest.raises(EvoError, match="gunzip -k"):  # Datasette reads only plain files
        serve(str(tmp_path / "a.sqlite.gz"))


def test_an_elite_names_the_operator_its_own_run_evaluated_it_by(tmp_path):
    """A sweep whose best kernel an earlier search in the same archive made first shows the sweep's
    operator, not the search's (the kernels table keeps the maker)."""
    from evo.archive.queries import elites
    a = Archive.open(tmp_path / "a.sqlite")
    search = a.start_run(kind="search", config={}, seed=0, backend="simulated")
    a.insert("kernels", {"id": "k1", "source": "", "family": "hopper", "params_json": "{}", "operator": "next_pick",
                         "run_id": search})
    sweep = a.start_run(kind="sweep", config={}, seed=0, backend="simulated")
    ev = a.insert("evaluations", {"run_id": sweep, "kernel_id": "k1", "M": 64, "N": 64, "K": 64, "status": "ok",
                                  "time_ms": 0.01, "speedup": 1.0, "mode": "rotating", "gpu": "g", "backend": "simulated",
                                  "operator": "sweep_shortlist"})
    a.insert("elites", {"run_id": sweep, "cell": "64x64x64", "M": 64, "N": 64, "K": 64, "kernel_id": "k1",
                        "evaluation_id": ev, "time_ms": 0.01, "speedup": 1.0})
    (row,) = elites(a, sweep)
    assert row["operator"] == "sweep_shortlist" and row["family"] == "hopper"
