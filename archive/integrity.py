"""SQLite's integrity check on an archive: run on every open (`PRAGMA quick_check`).

`quick_check` reads every page of every table and index and checks their structure (not that
indexes agree with their tables, which `integrity_check` adds at several times the cost). On a
50 MB archive it takes tens of milliseconds (see docs/archive.md). A damaged archive is refused for
writing; read-only opens warn and read what they can.
"""
from __future__ import annotations

import sqlite_utils

from evo.archive.connection import ArchiveDatabaseError, is_damage

MAX_PROBLEMS = 3


def integrity_problem(db: sqlite_utils.Database) -> str | None:
    """None when the file passes `PRAGMA quick_check`, else SQLite's first complaints (one line)."""
    try:
        rows = db.execute(f"PRAGMA quick_check({MAX_PROBLEMS})").fetchall()
    except ArchiveDatabaseError as e:
        if not is_damage(e):
            raise
        return str(e.sqlite_error)
    problems = [str(r[0]) for r in rows if r and r[0] != "ok"]
    problems = [p.replace("*** in database main ***", "").strip() for p in problems]
    problems = [p for p in problems if p]
    if not problems:
        return None
    return "; ".join(" ".join(p.split()) for p in problems)
