"""The archive under careless use: read-only opens, damaged files, odd paths (issue 12).

A damaged archive is a real one (several search runs) with garbage written over pages in its
middle; the commands run in-process through `evo.cli.main`, as a user would type them.
"""
import hashlib
import logging
import os
import random
import shutil
import sqlite3

import pytest

from evo.archive import Archive
from evo.archive.schema import MIGRATIONS
from evo.cli.hydra_app import compose
from evo.core.errors import ArchiveError
from evo.search import run_search
from tests.cli_helpers import evo_cli

SMALL = ["evaluator=simulated", "shapes=inline", "shapes.list=[64x64x64,77x4096x4096,1024x1024x1024]",
         "search.max_evaluations=12", "islands.n=2", "islands.population=4", "search.children_per_island=4",
         "llm=none", "search.progress=false", "evaluator.timeout_s=10"]


@pytest.fixture(scope="module")
def several_runs(tmp_path_factory):
    """A real archive with three search runs, closed cleanly (everything checkpointed into the file)."""
    path = tmp_path_factory.mktemp("safety") / "runs.sqlite"
    for seed in (1, 2, 3):
        run_search(*compose(SMALL + [f"archive.path={path}", f"search.seed={seed}"]))
    return path


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---- read-only opens -----------------------------------------------------------------------
def test_a_read_only_open_reads_but_never_writes(several_runs, tmp_path):
    path = tmp_path / "a.sqlite"
    shutil.copy(several_runs, path)
    before = digest(path)
    a = Archive.open(path, readonly=True)
    assert a.readonly and a.damage is None and len(a.runs()) == 3
    with pytest.raises(ArchiveError, match="opened read-only"):
        a.put_state(1, "x", 1)
    with pytest.raises(ArchiveError, match="read-only"):  # even around the typed API
        a.db.execute("delete from runs")
    a.close()
    assert digest(path) == before


def test_a_read_only_open_neither_migrates_nor_switches_to_wal(tmp_path, caplog):
    path = tmp_path / "old.sqlite"
    Archive.open(path, migrations=MIGRATIONS[:1]).close()
    con = sqlite3.connect(path)
    con.execute("pragma journal_mode = delete")
    con.close()
    newer = MIGRATIONS + [("run notes", lambda db: db["runs"].add_column("notes", str))]
    with caplog.at_level(logging.WARNING, logger="evo.archive"):
        a = Archive.open(path, readonly=True, migrations=newer)
    assert a.schema_version == 1 and a.count("runs") == 0  # read as it is
    assert f"evo archive upgrade {path}" in caplog.text
    a.close()
    con = sqlite3.connect(path)
    assert con.execute("pragma journal_mode").fetchone()[0] == "delete"
    con.close()
    a = Archive.open(path, migrations=newer)  # a writing open migrates
    assert a.schema_version == len(newer) and a.db.execute("pragma journal_mode").fetchone()[0] == "wal"
    a.db.execute("update meta set value = '999' where key = 'schema_version'")
    a.close()
    with pytest.raises(ArchiveError, match="newer evo"):
        Archive.open(path, readonly=True)


def test_a_read_only_open_sees_a_running_writers_latest_rows(tmp_path):
    writer = Archive.open(tmp_path / "w.sqlite")
    run = writer.start_run(kind="search", config={}, seed=0, backend="simulated")
    reader = Archive.open(tmp_path / "w.sqlite", readonly=True)
    assert reader.count("evaluations") == 0
    for i in range(3):  # committed into the WAL, never checkpointed while the writer stays open
        writer.insert("evaluations", {"run_id": run, "kernel_id": f"k{i}", "M": 1, "N": 1, "K": 1, "status": "ok"})
        assert reader.count("evaluations") == i + 1
    assert (tmp_path / "w.sqlite-wal").stat().st_size > 0
    late = Archive.open(tmp_path / "w.sqlite", readonly=True)
    assert late.count("evaluations") == 3
    for a in (late, reader, writer):
        a.close()


def test_the_upgrade_command_migrates_an_older_archive(tmp_path, capsys):
    path = tmp_path / "old.sqlite"
    Archive.open(path, migrations=MIGRATIONS[:1]).close()
    code, out, _ = evo_cli(capsys, "archive", "upgrade", str(path))
    assert code == 0 and f"schema version {len(MIGRATIONS)}" in out
    assert Archive.open(path, readonly=True).schema_version == len(MIGRATIONS)


# ---- damaged archives ----------------------------------------------------------------------
@pytest.fixture
def damaged(several_runs, tmp_path):
    """The three-run archive with 8 pages of garbage written over its middle."""
    path = tmp_path / "damaged.sqlite"
    shutil.copy(several_runs, path)
    size = path.stat().st_size
    assert size > 64 * 4096, "the archive should span many pages"
    with open(path, "r+b") as f:
        f.seek(size // 2 // 4096 * 4096)
        f.write(random.Random(12).randbytes(8 * 4096))
    return path


def test_a_damaged_archive_is_refused_for_writing_and_left_as_it_is(damaged, tmp_path, capsys):
    before = digest(damaged)
    with pytest.raises(ArchiveError, match="fails SQLite's integrity check .* is not written to"):
        Archive.open(damaged)
    for args in (["run", *SMALL, f"archive.path={damaged}"], ["resume", str(damaged)],
                 ["resume", str(damaged), "search.max_evaluations=50"]):
        code, _, err = evo_cli(capsys, *args)
        assert code == 2, (args, err)
        assert err.startswith("evo: error: ") and "fails SQLite's integrity check" in err and "recover" in err
        assert len(err.strip().splitlines()) == 1, err
    assert digest(damaged) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["damaged.sqlite"]  # no journal, no log, no WAL


def test_reading_commands_on_a_damaged_archive_warn_and_never_show_a_traceback(damaged, tmp_path, capsys):
    before = digest(damaged)
    commands = [["archive", "runs", str(damaged)], ["archive", "elites", str(damaged)],
                ["archive", "failures", str(damaged)], ["archive", "llm", str(damaged)],
                ["archive", "elites", "--json", str(damaged), "--run", "2"],
                ["export", str(damaged), "--out", str(tmp_path / "exported"), "--no-cubins"]]
    if _has_report_extra():
        commands.append(["report", str(damaged), "--out", str(tmp_path / "report")])
    for args in commands:
        code, _, err = evo_cli(capsys, *args)
        assert "Traceback" not in err, (args, err)
        assert f"{damaged} is damaged" in err, (args, err)  # the warning, and perhaps an error after it
        assert code in (0, 2), (args, code, err)
        if code == 2:
            last = err.strip().splitlines()[-1]
            assert last.startswith("evo: error: ") and "damaged" in last, (args, err)
    assert digest(damaged) == before


def _has_report_extra() -> bool:
    try:
        import jinja2  # noqa: F401
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def test_sqlite_errors_during_use_surface_as_one_line_archive_errors(damaged):
    a = Archive.open(damaged, readonly=True)
    assert a.damage and "Page" in a.damage
    with pytest.raises(ArchiveError, match="is damaged .*malformed.*recover"):
        for table in ("kernels", "evaluations", "compiles", "llm_calls", "elites", "run_state", "island_state"):
            list(a.db.query(f"select * from {table}"))
    with pytest.raises(sqlite3.DatabaseError):  # still the sqlite3 class, for code that catches it
        for table in ("kernels", "evaluations", "compiles", "llm_calls", "elites", "run_state", "island_state"):
            list(a.db.query(f"select * from {table}"))
    a.close()


# ---- odd paths -------------------------------------------------------------------------------
def test_dev_null_is_refused_and_no_journal_appears_beside_it():
    had_journal = os.path.exists("/dev/null-journal")
    for ro in (False, True):
        with pytest.raises(ArchiveError, match="/dev/null is not a regular file"):
            Archive.open("/dev/null", readonly=ro)
    assert os.path.exists("/dev/null-journal") == had_journal


def test_a_folder_is_refused(tmp_path):
    for ro in (False, True):
        with pytest.raises(ArchiveError, match=f"{tmp_path} is a folder, not an archive: give a file"):
            Archive.open(tmp_path, readonly=ro)
    assert list(tmp_path.iterdir()) == []


def test_a_path_under_a_file_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    for path in (tmp_path / "notes.txt" / "a.sqlite", tmp_path / "notes.txt" / "sub" / "a.sqlite"):
        with pytest.raises(ArchiveError, match="notes.txt is a file, not a folder"):
            Archive.open(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_a_read_only_folder_is_refused_before_sqlite_is_called(tmp_path, monkeypatch):
    """Tests run as root, for whom permission bits do not stop a write, so a folder that cannot be
    written is simulated by refusing write access to it; what is checked is that the archive asks
    before SQLite is called, and says what to do."""
    folder = tmp_path / "ro"
    folder.mkdir()
    Archive.open(folder / "existing.sqlite").close()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if os.path.realpath(p) == str(folder)
                        and mode & os.W_OK else real_access(p, mode, **kw))
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **kw: pytest.fail("SQLite was called"))
    with pytest.raises(ArchiveError, match="cannot create .*new.sqlite: the folder .*ro is read-only here"):
        Archive.open(folder / "new.sqlite")
    with pytest.raises(ArchiveError, match="folder .*ro is read-only here and SQLite keeps its -wal"):
        Archive.open(folder / "existing.sqlite")
    assert sorted(p.name for p in folder.iterdir()) == ["existing.sqlite"]


def test_a_file_that_is_not_sqlite_is_refused_and_left_untouched(tmp_path, capsys):
    path = tmp_path / "notes.sqlite"
    path.write_text("not a database, but someone's notes\n" * 200)
    before = digest(path)
    for ro in (False, True):
        with pytest.raises(ArchiveError, match="is not a SQLite file"):
            Archive.open(path, readonly=ro)
    code, _, err = evo_cli(capsys, "run", *SMALL, f"archive.path={path}")
    assert code == 2 and "is not a SQLite file" in err and len(err.strip().splitlines()) == 1, err
    assert digest(path) == before and sorted(p.name for p in tmp_path.iterdir()) == ["notes.sqlite"]


def test_browsing_a_missing_archive_says_so(tmp_path, capsys):
    code, _, err = evo_cli(capsys, "archive", "elites", str(tmp_path / "nope.sqlite"))
    assert code == 2 and "no archive at" in err
    assert list(tmp_path.iterdir()) == []
