"""`evo archive serve`: Datasette over an archive, read-only, with descriptions and canned queries."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from evo.archive.datasette import metadata
from evo.core.errors import EvoError


def command(path: str, port: int, meta_path: str) -> list[str]:
    exe = shutil.which("datasette")
    base = [exe] if exe else [sys.executable, "-m", "datasette"]
    # Not --immutable: that mode ignores the WAL, where a running search's latest rows are. Datasette
    # runs only read-only SQL for anonymous users, so the archive cannot be changed through it.
    return base + ["serve", path, "--metadata", meta_path, "--host", "127.0.0.1", "--port", str(port)]


def serve(path: str, *, port: int = 8001, open_browser: bool = False) -> None:
    if not Path(path).is_file():
        raise EvoError(f"no archive at {path}")
    try:
        import datasette  # noqa: F401
    except ImportError:
        raise EvoError("Datasette is not installed: pip install -e '.[report]'") from None
    meta = Path(tempfile.mkdtemp(prefix="evo-datasette-")) / "metadata.json"
    meta.write_text(json.dumps(metadata(Path(path).stem)))
    print(f"serving {path} read-only on http://127.0.0.1:{port}/ (Ctrl-C to stop)")
    subprocess.run(command(path, port, str(meta)), check=False)
