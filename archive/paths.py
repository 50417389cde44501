"""Where an archive may live: one clear line for a path SQLite must not be pointed at.

SQLite opens whatever it is given and writes journals beside it (`archive.path=/dev/null` once
made `/dev/null-journal`). `check_path` runs before SQLite touches anything: a device, a folder, a
path under a file, a folder that cannot be written (SQLite keeps `-wal` and `-shm` files beside the
archive, so writing needs the folder too) each raise an ArchiveError that says what to give
instead. Files that are not SQLite are left to SQLite's own check, which reads without writing.
"""
from __future__ import annotations

import os
from pathlib import Path

from evo.core.errors import ArchiveError

EXAMPLE = "runs/evo.sqlite"


def _existing_ancestor(path: Path) -> Path:
    p = path.absolute().parent
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def check_path(path: Path, *, create: bool, readonly: bool) -> None:
    """Raise ArchiveError when `path` cannot hold an archive opened this way."""
    if path.is_symlink() and not path.exists():
        raise ArchiveError(f"{path} is a link to nothing ({os.readlink(path)}): give an archive file such as {EXAMPLE}")
    if path.exists():
        if path.is_dir():
            raise ArchiveError(f"{path} is a folder, not an archive: give a file, e.g. {path / 'evo.sqlite'}")
        if not path.is_file():
            raise ArchiveError(f"{path} is not a regular file (a device, pipe or socket): give an archive file "
                               f"such as {EXAMPLE}")
        if readonly:
            if not os.access(path, os.R_OK):
                raise ArchiveError(f"cannot read {path}: permission denied")
            return
        if not os.access(path, os.R_OK | os.W_OK):
            raise ArchiveError(f"cannot write {path}: the file is read-only here (browsing commands such as "
                               f"`evo archive runs {path}` still read it; copy it somewhere writable to continue)")
        folder = path.absolute().parent
        if not os.access(folder, os.W_OK | os.X_OK):
            raise ArchiveError(f"cannot write {path}: its folder {folder} is read-only here and SQLite keeps its "
                               f"-wal and -shm files beside the archive; copy it somewhere writable to continue")
        return
    if readonly or not create:
        raise ArchiveError(f"no archive at {path}: check the path, or run `evo run archive.path={path}` to create one")
    folder = _existing_ancestor(path)
    if not folder.is_dir():
        raise ArchiveError(f"cannot create {path}: {folder} is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ArchiveError(f"cannot create {path}: the folder {folder} is read-only here; give archive.path "
                           f"in a writable folder")
