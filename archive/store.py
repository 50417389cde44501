"""The Archive: open (create or migrate) one SQLite file and read/write its records."""
from __future__ import annotations

import contextlib
import datetime as _dt
import gzip
import json
import logging
import shutil
import socket
import sqlite3
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sqlite_utils

from evo.archive.connection import ArchiveDatabaseError, connect, is_damage, recover_hint
from evo.archive.integrity import integrity_problem
from evo.archive.paths import check_path
from evo.archive.schema import MIGRATIONS, Migration
from evo.core.errors import ArchiveError
from evo.core.version import VERSION

APP_ID = "evo-archive"
log = logging.getLogger(__name__)


def now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="milliseconds")


def _enable_wal(db: sqlite_utils.Database, wait_s: float = 30.0) -> None:
    """Switch to WAL unless already there. The switch needs the file to itself and does not wait
    for a busy file the way statements do, so retry while another process is creating it."""
    deadline = time.monotonic() + wait_s
    while db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
        try:
            db.execute("PRAGMA journal_mode = wal")
        except ArchiveDatabaseError as e:
            if not isinstance(e, sqlite3.OperationalError) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _leave_wal(db: sqlite_utils.Database) -> None:
    """Back to a rollback journal where this is the file's last connection: a closed archive is then one
    file, which readers open without making -wal and -shm files beside it (and can read in a read-only
    folder). With any other connection open (a reader, another writer) SQLite refuses at once: it stays WAL."""
    try:
        db.execute("PRAGMA journal_mode = delete")
    except ArchiveDatabaseError as e:
        if not isinstance(e, sqlite3.OperationalError):
            raise


def _file_uri(path: Path, mode: str) -> str:
    return "file:" + urllib.parse.quote(str(path.absolute())) + f"?mode={mode}"


class Archive:
    """One search's SQLite file. Writes go through `transaction()`; every write method commits.

    `Archive.open(path)` opens for writing (creating or migrating the file, refusing a damaged one);
    `Archive.open(path, readonly=True)` opens for reading only (browsing, reports, export), without
    migrating, and sees a running search's latest rows. `damage` holds SQLite's complaint about a
    damaged file opened read-only (None when its integrity check passed)."""

    def __init__(self, db: sqlite_utils.Database, path: Path, *, readonly: bool = False):
        self.db = db
        self.path = path
        self.readonly = readonly
        self.damage: str | None = None
        self._lock = threading.RLock()
        self._depth = 0
        self._unpacked: tempfile.TemporaryDirectory | None = None  # a gzipped archive's plain copy

    # ---- opening -------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | Path, *, create: bool = True, readonly: bool = False,
             migrations: list[tuple[str, Migration]] | None = None, _shown_as: Path | None = None) -> Archive:
        """Open for writing (create when missing and `create`; migrate an older file), or with
        `readonly=True` for reading only. Raises ArchiveError with one line for anything else: a
        path that cannot hold an archive, a file that is not an evo archive, a newer schema, a file
        that fails SQLite's integrity check (writing only: read-only opens warn and carry on)."""
        path = Path(path)
        migrations = MIGRATIONS if migrations is None else migrations
        if path.suffix == ".gz":
            return cls._open_gzipped(path, readonly=readonly, migrations=migrations)
        check_path(path, create=create, readonly=readonly)
        if readonly:  # errors name the file the user gave (`_shown_as`: a gzipped archive's, not its copy's)
            conn = connect(_file_uri(path, "ro"), path=_shown_as or path, readonly=True, uri=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = connect(str(path), path=path, readonly=False)
        try:
            db = sqlite_utils.Database(conn)
            db.execute("PRAGMA busy_timeout = 30000")
            archive = cls(db, _shown_as or path, readonly=readonly)
            if readonly:
                archive._check_readable(len(migrations))
            else:
                archive._prepare_for_writing()
                archive._migrate(migrations)
        except BaseException as e:
            conn.close()
            if isinstance(e, ArchiveDatabaseError) and is_damage(e) and "not a database" in str(e).lower():
                raise ArchiveError(f"{path} is not a SQLite file (nor an evo archive): give the archive of a "
                                   f"search, e.g. {path.with_name('evo.sqlite')}") from None
            raise
        return archive

    @classmethod
    def _open_gzipped(cls, path: Path, *, readonly: bool, migrations: list[tuple[str, Migration]]) -> Archive:
        """A gzipped archive (`.sqlite.gz`, as benchmarks/ keeps them), for reading only: opened from a
        plain copy in a temporary folder that `close` removes."""
        if not path.exists():
            raise ArchiveError(f"no archive at {path}: check the path")
        if not readonly:
            raise ArchiveError(f"{path} is gzipped: evo reads it as it is (`evo archive`, `evo export`, "
                               f"`evo bench kernels_of=`) but writes only a plain archive; `gunzip -k {path}` "
                               f"gives one")
        check_path(path, create=False, readonly=True)
        unpacked = tempfile.TemporaryDirectory(prefix="evo-archive-")
        try:
            plain = Path(unpacked.name) / path.stem
            with gzip.open(path) as src, open(plain, "wb") as dst:
                shutil.copyfileobj(src, dst)
            archive = cls.open(plain, readonly=True, migrations=migrations, _shown_as=path)
        except (OSError, EOFError) as e:
            unpacked.cleanup()
            raise ArchiveError(f"cannot read {path} as a gzipped archive: {e}") from None
        except ArchiveError as e:  # its words name the file the user gave, not the temporary copy
            unpacked.cleanup()
            raise ArchiveError(str(e).replace(str(plain), str(path)).replace(unpacked.name, str(path.parent))) from None
        except BaseException:
            unpacked.cleanup()
            raise
        archive._unpacked = unpacked
        return archive

    def _prepare_for_writing(self) -> None:
        """Refuse a damaged file before anything is written; then WAL (a foreign file keeps its
        journal mode: `_migrate` refuses it)."""
        tables = self.db.table_names()
        if tables:
            problem = integrity_problem(self.db)
            if problem:
                raise ArchiveError(f"{self.path} fails SQLite's integrity check ({problem}) and is not written to: "
                                   f"{recover_hint(self.path)}; `evo archive` and `evo export` still read it")
        if not tables or "meta" in tables:
            _enable_wal(self.db)

    def _check_readable(self, target: int) -> None:
        """A read-only open: an evo archive of this or an older version; warn when it is damaged."""
        version = self._version()
        if version == 0:
            raise ArchiveError(f"{self.path} is empty: not an evo archive yet (`evo run archive.path={self.path}` "
                               f"makes one)")
        if version > target:
            raise ArchiveError(f"{self.path} was written by a newer evo (schema version {version}; this evo "
                               f"knows up to {target}): upgrade evo to open it")
        if version < target:
            plain = self.path.with_suffix("") if self.path.suffix == ".gz" else self.path
            upgrade = (f"`gunzip -k {self.path}`, then `evo archive upgrade {plain}`" if plain != self.path
                       else f"`evo archive upgrade {self.path}`")
            log.warning(f"{self.path} has schema version {version} (this evo writes {target}): reading it as it is; "
                        f"if something fails, upgrade it once: {upgrade}")
        self.damage = integrity_problem(self.db)
        if self.damage:
            log.warning(f"{self.path} is damaged (SQLite's integrity check: {self.damage}): showing what can still "
                        f"be read, which may be incomplete; {recover_hint(self.path)}")

    def _version(self) -> int:
        tables = self.db.table_names()
        if "meta" not in tables:
            if tables:
                raise ArchiveError(f"{self.path} is a SQLite file but not an evo archive (no meta table)")
            return 0
        row = self.db.execute("select value from meta where key = 'schema_version'").fetchone()
        app = self.db.execute("select value from meta where key = 'application'").fetchone()
        if not row or not app or app[0] != APP_ID:
            raise ArchiveError(f"{self.path} is not an evo archive (meta table without an evo schema version)")
        return int(row[0])

    def _migrate(self, migrations: list[tuple[str, Migration]]) -> None:
        """Bring the schema to the newest version. The version is read and every migration applied
        under one write lock, so two processes opening the same new file cannot both create it."""
        target = len(migrations)
        with self.transaction():
            version = self._version()
            if version > target:
                raise ArchiveError(f"{self.path} was written by a newer evo (schema version {version}; this evo "
                                   f"knows up to {target}): upgrade evo to open it")
            for number in range(version + 1, target + 1):
                name, migrate = migrations[number - 1]
                if number == 1:
                    self.db.execute("create table meta (key text primary key, value text)")
                    self.db.execute("insert into meta values ('application', ?)", [APP_ID])
                    self.db.execute("insert into meta values ('schema_version', '0')")
                    self.db.execute("create table migrations (version integer primary key, name text, applied_at text)")
                migrate(self.db)
                self.db.execute("update meta set value = ? where key = 'schema_version'", [str(number)])
                self.db.execute("insert into migrations values (?, ?, ?)", [number, name, now()])
                if version:  # an existing archive, not a new one
                    log.info(f"{self.path}: schema upgraded to version {number} ({name})")

    @property
    def schema_version(self) -> int:
        return self._version()

    def close(self) -> None:
        if not self.readonly and "meta" in self.db.table_names():  # an evo archive (a foreign file keeps its mode)
            _leave_wal(self.db)
        self.db.conn.close()
        if self._unpacked is not None:
            self._unpacked.cleanup()
            self._unpacked = None

    # ---- writing -------------------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """All writes inside commit together or not at all (re-entrant, thread-safe).

        An explicit BEGIN: sqlite-utils commits implicit transactions after each statement."""
        if self.readonly:
            raise ArchiveError(f"{self.path} was opened read-only (for browsing) and cannot be written")
        with self._lock:
            if self._depth == 0:
                self.db.conn.execute("BEGIN IMMEDIATE")
            self._depth += 1
            try:
                yield
            except BaseException:
                self._depth -= 1
                if self._depth == 0 and self.db.conn.in_transaction:
                    try:
                        self.db.conn.execute("ROLLBACK")
                    except ArchiveError as e:  # a damaged file may refuse even this: the first error counts
                        log.debug(f"rollback failed: {e}")
                raise
            self._depth -= 1
            if self._depth == 0:
                try:
                    self.db.conn.execute("COMMIT")
                except ArchiveError:
                    if self.db.conn.in_transaction:
                        with contextlib.suppress(ArchiveError):
                            self.db.conn.execute("ROLLBACK")
                    raise

    def _insert(self, table: str, record: dict[str, Any], *, replace: bool = False, ignore: bool = False) -> int:
        cols = ", ".join(f"[{k}]" for k in record)
        marks = ", ".join("?" for _ in record)
        verb = "insert or replace" if replace else "insert or ignore" if ignore else "insert"
        cur = self.db.conn.execute(f"{verb} into [{table}] ({cols}) values ({marks})", list(record.values()))
        return cur.lastrowid or 0

    def insert(self, table: str, record: dict[str, Any], *, replace: bool = False, ignore: bool = False) -> int:
        with self.transaction():
            return self._insert(table, record, replace=replace, ignore=ignore)

    # ---- runs ----------------------------------------------------------------------------
    def start_run(self, *, kind: str, config: dict, seed: int, backend: str, name: str = "",
                  gpu: str = "") -> int:
        return self.insert("runs", {
            "name": name, "kind": kind, "status": "running", "created_at": now(), "updated_at": now(),
            "config_json": json.dumps(config, sort_keys=True), "seed": seed, "backend": backend,
            "gpu": gpu, "host": socket.gethostname(), "evo_version": VERSION,
        })

    def set_run_status(self, run_id: int, status: str) -> None:
        with self.transaction():
            self.db.execute("update runs set status = ?, updated_at = ? where id = ?", [status, now(), run_id])

    def run(self, run_id: int) -> dict:
        rows = list(self.db.query("select * from runs where id = ?", [run_id]))
        if not rows:
            raise ArchiveError(f"no run {run_id} in {self.path}: `evo archive runs {self.path}` lists them")
        return rows[0]

    def runs(self) -> list[dict]:
        return list(self.db.query("""
            select r.id, r.name, r.kind, r.status, r.backend, r.gpu, r.created_at, r.updated_at,
              (select count(*) from evaluations e where e.run_id = r.id) as evaluations,
              (select count(*) from evaluations e where e.run_id = r.id and e.status = 'ok') as correct,
              (select count(*) from kernels k where k.run_id = r.id) as kernels,
              (select count(*) from elites c where c.run_id = r.id) as cells
            from runs r order by r.id"""))

    def set_run_config(self, run_id: int, config: dict) -> None:
        """Replace a run's stored configuration (a resume with overrides)."""
        with self.transaction():
            self.db.execute("update runs set config_json = ?, updated_at = ? where id = ?",
                            [json.dumps(config, sort_keys=True), now(), run_id])

    def touch_run(self, run_id: int) -> None:
        self.db.execute("update runs set updated_at = ? where id = ?", [now(), run_id])

    def last_run(self, kind: str | None = None) -> dict | None:
        sql = "select * from runs" + (" where kind = ?" if kind else "") + " order by id desc limit 1"
        rows = list(self.db.query(sql, [kind] if kind else []))
        return rows[0] if rows else None

    # ---- state for resume ----------------------------------------------------------------
    def put_state(self, run_id: int, key: str, value: Any) -> None:
        self.insert("run_state", {"run_id": run_id, "key": key, "value_json": json.dumps(value),
                                   "updated_at": now()}, replace=True)

    def get_state(self, run_id: int, key: str, default: Any = None) -> Any:
        row = self.db.execute("select value_json from run_state where run_id = ? and key = ?", [run_id, key]).fetchone()
        return json.loads(row[0]) if row else default

    def delete_state(self, run_id: int, key: str) -> None:
        with self.transaction():
            self.db.execute("delete from run_state where run_id = ? and key = ?", [run_id, key])

    def drop_islands(self, run_id: int, from_island: int) -> None:
        """Forget the saved populations of islands `from_island` and up (a resume with fewer islands)."""
        with self.transaction():
            self.db.execute("delete from island_state where run_id = ? and island >= ?", [run_id, from_island])

    def count(self, table: str, where: str = "", params: list | None = None) -> int:
        return self.db.execute(f"select count(*) from [{table}]" + (f" where {where}" if where else ""),
                               params or []).fetchone()[0]
