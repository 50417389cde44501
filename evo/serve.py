"""`evo archive serve`: Datasette over an archive, read-only, with descriptions and canned queries.

evo owns the server it starts. A busy port is refused before anything starts. Datasette runs as a
child in a session (and process group) of its own, so a Ctrl-C in the terminal reaches evo only;
evo passes SIGINT and SIGTERM on to the child's group and waits for it to stop, killing it if it
has not stopped within `STOP_GRACE_S`. The temporary folder of the metadata file is removed
however it ends. "serving ..." is printed once the server accepts connections; a Datasette that
exits before that, or later on its own, ends the command with an error (exit status 2).
"""
from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

from evo.archive import Archive
from evo.archive.datasette import metadata
from evo.core.errors import EvoError
from evo.core.extras import install_hint
from evo.core.logs import RESULT
from evo.core.signals import STOP_SIGNALS

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
START_TIMEOUT_S = 60.0  # for Datasette to accept connections
STOP_GRACE_S = 10.0  # for Datasette to stop after a forwarded signal, before it is killed


def command(path: str, port: int, meta_path: str) -> list[str]:
    exe = shutil.which("datasette")
    base = [exe] if exe else [sys.executable, "-m", "datasette"]
    # Not --immutable: that mode ignores the WAL, where a running search's latest rows are. Datasette
    # runs only read-only SQL for anonymous users, so the archive cannot be changed through it.
    return base + ["serve", path, "--metadata", meta_path, "--host", HOST, "--port", str(port)]


def check_port(port: int, host: str = HOST) -> None:
    """Raise EvoError (one line) unless a server could listen on host:port now. Probed with
    SO_REUSEADDR, as servers bind, so a port left in TIME_WAIT by a stopped server counts as free."""
    if not 1 <= port <= 65535:
        raise EvoError(f"port {port} is not a TCP port (1-65535): choose one with --port")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise EvoError(f"port {port} on {host} is already in use: stop what listens there, or choose "
                               f"another port with --port") from None
            raise EvoError(f"cannot listen on {host}:{port} ({e.strerror}): choose another port with --port") from None


def answers(port: int, host: str = HOST) -> bool:
    """Whether something accepts TCP connections on host:port."""
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def simulated_runs(path: str) -> tuple[int, ...]:
    """The ids of the archive's runs that used the CPU test double."""
    a = Archive.open(path, create=False, readonly=True)
    try:
        return tuple(r["id"] for r in a.runs() if r["backend"] == "simulated")
    finally:
        a.close()


def serve(path: str, *, port: int = 8001, open_browser: bool = False) -> None:
    """Serve the archive until SIGINT or SIGTERM (a clean stop), or until Datasette fails (EvoError)."""
    if not Path(path).is_file():
        raise EvoError(f"no archive at {path}")
    if path.endswith(".gz"):
        raise EvoError(f"{path} is gzipped and Datasette reads only plain SQLite files: `gunzip -k {path}`, then "
                       f"serve {path[:-3]}")
    try:
        import datasette  # noqa: F401
    except ImportError:
        raise EvoError(f"Datasette is not installed: {install_hint('report')}") from None
    check_port(port)
    with tempfile.TemporaryDirectory(prefix="evo-datasette-") as tmp:
        meta = Path(tmp) / "metadata.json"
        meta.write_text(json.dumps(metadata(Path(path).stem, simulated_runs(path))))
        _Server(command(path, port, str(meta)), port).run(f"serving {path} read-only on http://{HOST}:{port}/ "
                                                           f"(Ctrl-C to stop)")


class _Server:
    """Datasette as a child process group: started, watched, stopped on a forwarded signal."""

    def __init__(self, cmd: list[str], port: int):
        self.cmd, self.port = cmd, port
        self.proc: subprocess.Popen | None = None
        self.signals: list[int] = []  # stop signals received (and passed on)

    def run(self, serving_message: str) -> None:
        handlers: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():  # signal handlers live in the main thread
            handlers = {s: signal.signal(s, self._forward) for s in STOP_SIGNALS}
        try:
            try:
                self.proc = subprocess.Popen(self.cmd, start_new_session=True)
            except OSError as e:
                raise EvoError(f"cannot start Datasette ({self.cmd[0]}: {e.strerror})") from None
            if self.signals:  # arrived while it was being started
                self._signal(self.signals[0])
            started = self._wait_until_serving()
            if started:
                log.info(serving_message, extra=RESULT)
            status = self._wait()
        finally:
            self._stop()
            for s, handler in handlers.items():
                signal.signal(s, handler)
        if self.signals:
            log.info(f"stopped Datasette on port {self.port}")
            return
        if not started:
            raise EvoError(f"Datasette exited ({_exit(status)}) before serving on port {self.port}: "
                           f"its messages are above")
        raise EvoError(f"Datasette stopped on its own ({_exit(status)}): its messages are above")

    def _forward(self, signum: int, _frame: FrameType | None) -> None:
        self.signals.append(signum)
        self._signal(signum)

    def _signal(self, signum: int) -> None:
        if self.proc is not None and self.proc.returncode is None:
            try:
                os.killpg(self.proc.pid, signum)  # its group: it is the leader (start_new_session)
            except ProcessLookupError:
                pass

    def _wait_until_serving(self) -> bool:
        assert self.proc is not None
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.signals and self.proc.poll() is None:
            if answers(self.port):
                return self.proc.poll() is None
            if time.monotonic() > deadline:
                raise EvoError(f"Datasette did not accept connections on port {self.port} within "
                               f"{START_TIMEOUT_S:.0f} s: stopped it")
            time.sleep(0.05)
        return False

    def _wait(self) -> int:
        """Its exit status; after a stop signal it gets STOP_GRACE_S, then it is killed."""
        assert self.proc is not None
        deadline: float | None = None
        while True:
            try:
                return self.proc.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                if self.signals and deadline is None:
                    deadline = time.monotonic() + STOP_GRACE_S
                if deadline is not None and time.monotonic() > deadline:
                    log.warning(f"Datasette did not stop within {STOP_GRACE_S:.0f} s of the signal: killed it")
                    self._signal(signal.SIGKILL)
                    deadline = float("inf")

    def _stop(self) -> None:
        """Make sure the child is gone (on an error, or an exception in evo itself)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self._signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            self._signal(signal.SIGKILL)
            self.proc.wait()


def _exit(status: int) -> str:
    return f"killed by signal {-status}" if status < 0 else f"status {status}"
