"""The SQLite connection under an Archive: every SQLite error becomes one `ArchiveError` line.

SQLite reports a damaged file, a lock held too long or a write to a read-only file as a sqlite3
exception from wherever the statement ran, often while a query's rows are being read. The
connection and cursor classes here turn each `sqlite3.DatabaseError` into an `ArchiveDatabaseError`
(an `ArchiveError`, so the command line prints one line) that names the file and says what to do.
The raised class also derives from the original sqlite3 class, so code that catches, say,
`sqlite3.OperationalError` still does.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from evo.core.errors import ArchiveError

T = TypeVar("T")


class ArchiveDatabaseError(ArchiveError):
    """SQLite failed on an archive; `sqlite_error` is what SQLite raised."""

    sqlite_error: sqlite3.Error


_CLASSES: dict[type, type] = {}


def _error_class(kind: type) -> type:
    if kind not in _CLASSES:
        _CLASSES[kind] = type(f"Archive{kind.__name__}", (ArchiveDatabaseError, kind), {})
    return _CLASSES[kind]


def is_damage(e: BaseException) -> bool:
    """Whether SQLite says the file itself is damaged (rather than busy, read-only or misused)."""
    text = str(e).lower()
    return any(s in text for s in ("malformed", "not a database", "corrupt", "disk image"))


def recover_hint(path: object) -> str:
    plain = str(path)[:-3] if str(path).endswith(".gz") else None  # a gzipped archive: its plain file first
    return ("restore a copy, or salvage what SQLite can still read with "
            + (f"`gunzip -k {path}`, then " if plain else "")
            + f"`sqlite3 {plain or path} .recover | sqlite3 recovered.sqlite`")


def explain(path: object, e: sqlite3.Error, *, readonly: bool = False) -> str:
    """One line: what SQLite said about `path`, and what to do."""
    text = str(e) or type(e).__name__
    low = text.lower()
    if is_damage(e):
        return f"{path} is damaged (SQLite: {text}): {recover_hint(path)}"
    if "locked" in low or "busy" in low:
        return f"{path} is locked by another process (SQLite: {text}, after waiting 30 s): try again when it is done"
    if "readonly" in low or "read-only" in low:
        if readonly:
            return f"{path} was opened read-only (for browsing) and cannot be written: use a writing command"
        return (f"cannot write {path} (SQLite: {text}): the file or its folder is read-only here; "
                f"copy it somewhere writable")
    if "disk i/o" in low or "full" in low or "unable to open" in low:
        return f"cannot read or write {path} (SQLite: {text}): check the disk, its free space and permissions"
    if "no such table" in low or "no such column" in low:
        return (f"{path} lacks what this evo expects (SQLite: {text}): if it was written by an older evo, "
                f"upgrade it once with `evo archive upgrade {path}`")
    return f"SQLite failed on {path}: {text}"


def translate(path: object, e: sqlite3.Error, *, readonly: bool = False) -> ArchiveDatabaseError:
    err = _error_class(type(e))(explain(path, e, readonly=readonly))
    err.sqlite_error = e
    return err


class Cursor(sqlite3.Cursor):
    """A cursor whose statements and row fetches raise ArchiveDatabaseError."""

    def _guard(self, fn: Callable[..., T], *args: Any) -> T:
        try:
            return fn(*args)
        except sqlite3.DatabaseError as e:
            self._fail(e)

    def _fail(self, e: sqlite3.DatabaseError) -> NoReturn:
        conn = self.connection
        raise translate(getattr(conn, "evo_path", "the archive"), e,
                        readonly=getattr(conn, "evo_readonly", False)) from e

    def execute(self, sql: str, parameters: Any = (), /) -> Cursor:
        return self._guard(super().execute, sql, parameters)

    def executemany(self, sql: str, seq_of_parameters: Any, /) -> Cursor:
        return self._guard(super().executemany, sql, seq_of_parameters)

    def executescript(self, sql_script: str, /) -> sqlite3.Cursor:
        return self._guard(super().executescript, sql_script)

    def fetchone(self) -> Any:
        return self._guard(super().fetchone)

    def fetchmany(self, size: int | None = 1) -> list[Any]:
        return self._guard(super().fetchmany, size)

    def fetchall(self) -> list[Any]:
        return self._guard(super().fetchall)

    def __next__(self) -> Any:
        return self._guard(super().__next__)


class Connection(sqlite3.Connection):
    """A connection that knows its archive's path and hands out translating cursors."""

    evo_path: object = "the archive"
    evo_readonly: bool = False

    def cursor(self, factory: Any = Cursor) -> Any:
        return super().cursor(factory)

    def execute(self, sql: str, parameters: Any = (), /) -> Cursor:
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any, /) -> Cursor:
        return self.cursor().executemany(sql, parameters)

    def executescript(self, sql_script: str, /) -> sqlite3.Cursor:
        return self.cursor().executescript(sql_script)

    def commit(self) -> None:
        try:
            super().commit()
        except sqlite3.DatabaseError as e:
            raise translate(self.evo_path, e, readonly=self.evo_readonly) from e


def connect(target: str, *, path: object, readonly: bool, uri: bool = False) -> Connection:
    """A translating connection (waits up to 30 s for a lock); SQLite errors as ArchiveDatabaseError."""
    try:
        conn = sqlite3.connect(target, timeout=30, check_same_thread=False, uri=uri, factory=Connection)
    except sqlite3.DatabaseError as e:
        raise translate(path, e, readonly=readonly) from e
    assert isinstance(conn, Connection)
    conn.evo_path, conn.evo_readonly = path, readonly
    return conn
