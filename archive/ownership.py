"""Who is running a run: one live process per run, so two never continue the same search.

A recorded session claims its run before it writes anything else and lets go when it ends
(finished, stopped or failed). The claim is the run's `owner` key in `run_state`:

    {"host", "pid", "started" (the process's start time), "boot" (the kernel's boot id),
     "pidns" (its pid namespace), "token" (random, one per session), "since"}

written in one transaction that first reads the current owner, so of two processes claiming at
once exactly one succeeds. An owner whose process still runs refuses the claim. On this machine
(same host name, boot and pid namespace) a process that is gone (no such pid, a zombie, or the pid
reused by a newer process) leaves a stale claim, which is taken over with a warning. Elsewhere
(another host sharing the disk, another container) evo cannot tell, so the claim is refused unless
`take_over` (`evo resume ARCHIVE --take-over`) says that process is gone. A session whose claim was
taken over notices at its next save and stops without writing its state.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import os
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path

from evo.archive.store import Archive
from evo.core.errors import ArchiveError

OWNER_KEY = "owner"


class RunHeld(ArchiveError):
    """Another process holds the run (or may: evo cannot check a process on another machine)."""


class RunTakenOver(ArchiveError):
    """This session's claim on its run was taken over by another process."""


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def _proc_stat(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (state first), or None without /proc."""
    text = _read(f"/proc/{pid}/stat")
    return text.rpartition(")")[2].split() if text else None


def _pidns() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


@dataclass(frozen=True)
class Owner:
    host: str
    pid: int
    started: str  # the process's start time (clock ticks after boot, from /proc), "" where unknown
    boot: str  # the kernel's boot id
    pidns: str  # the pid namespace (containers on one kernel have their own)
    token: str  # random: tells two sessions of one process apart
    since: str

    @staticmethod
    def current() -> Owner:
        stat = _proc_stat(os.getpid())
        return Owner(socket.gethostname(), os.getpid(), stat[19] if stat and len(stat) > 19 else "",
                     _read("/proc/sys/kernel/random/boot_id"), _pidns(), secrets.token_hex(8),
                     _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"))

    @staticmethod
    def from_json(d: dict) -> Owner:
        fields = {f.name for f in dataclasses.fields(Owner)}
        return Owner(**{"host": "?", "pid": 0, "started": "", "boot": "", "pidns": "", "token": "", "since": "?",
                        **{k: v for k, v in d.items() if k in fields}})

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host} (since {self.since})"

    def here(self) -> bool:
        """Whether this process can see the owner's process (same host, boot and pid namespace)."""
        return (self.host, self.boot, self.pidns) == (socket.gethostname(), _read("/proc/sys/kernel/random/boot_id"),
                                                      _pidns())


def liveness(owner: Owner) -> str:
    """"alive", "gone" (checked on this machine) or "unknown" (another machine or container)."""
    if not owner.here():
        same_host_rebooted = (owner.host == socket.gethostname() and owner.boot and owner.pidns == _pidns()
                              and owner.boot != _read("/proc/sys/kernel/random/boot_id"))
        return "gone" if same_host_rebooted else "unknown"
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return "gone"
    except PermissionError:  # exists, another user's
        pass
    stat = _proc_stat(owner.pid)
    if stat is None:
        return "alive" if not Path("/proc/self/stat").exists() else "gone"
    if stat[0] in ("Z", "X"):  # exited, not yet reaped
        return "gone"
    if owner.started and len(stat) > 19 and stat[19] != owner.started:  # the pid now names another process
        return "gone"
    return "alive"


def held_by(a: Archive, run_id: int) -> Owner | None:
    d = a.get_state(run_id, OWNER_KEY)
    return Owner.from_json(d) if isinstance(d, dict) else None


def live_owner(a: Archive, run_id: int) -> Owner | None:
    """The run's owner if it is a live process on this machine (None: nobody, gone, or unknowable)."""
    held = held_by(a, run_id)
    return held if held is not None and liveness(held) == "alive" else None


def refuse_if_held(a: Archive, run_id: int, *, take_over: bool = False) -> Owner | None:
    """Raise RunHeld if another process holds the run and may still be running; otherwise return
    the stale owner being replaced (None when nobody held the run)."""
    held = held_by(a, run_id)
    if held is None:
        return None
    state = liveness(held)
    if state == "alive":
        raise RunHeld(f"run {run_id} of {a.path} is being run by {held.describe()}: wait for it to end, or stop it "
                      f"(Ctrl-C or `kill {held.pid}`), before continuing it")
    if state == "unknown" and not take_over:
        raise RunHeld(f"run {run_id} of {a.path} is held by {held.describe()}, which cannot be checked from here: if "
                      f"that process is gone (killed, or its machine is down), take the run over by giving the same "
                      f"command --take-over, e.g. `evo resume {a.path} --take-over`")
    return held


def claim(a: Archive, run_id: int, *, take_over: bool = False) -> tuple[Owner, str]:
    """Make this process the run's owner (see the module's doc). Returns the owner and a note to
    log when a stale claim was taken over ("" otherwise)."""
    mine = Owner.current()
    with a.transaction():
        stale = refuse_if_held(a, run_id, take_over=take_over)
        a.put_state(run_id, OWNER_KEY, dataclasses.asdict(mine))
    note = ""
    if stale is not None:
        why = "that process is gone" if liveness(stale) == "gone" else "--take-over given"
        note = f"run {run_id}: taking over the stale claim of {stale.describe()} ({why})"
    return mine, note


def check_owner(a: Archive, run_id: int, owner: Owner) -> None:
    """Raise RunTakenOver unless `owner` still holds the run (call it inside the transaction that writes)."""
    held = held_by(a, run_id)
    if held is None or held.token != owner.token:
        by = held.describe() if held else "another process"
        raise RunTakenOver(f"run {run_id} of {a.path} was taken over by {by}: this process stops without "
                           f"saving its state")


def release(a: Archive, run_id: int, owner: Owner, status: str | None) -> bool:
    """Record the run's final status (if given) and let go, in one transaction, if `owner` still
    holds the run; False (and nothing written) when another process took it over."""
    with a.transaction():
        held = held_by(a, run_id)
        if held is None or held.token != owner.token:
            return False
        if status:
            a.set_run_status(run_id, status)
        a.delete_state(run_id, OWNER_KEY)
    return True
