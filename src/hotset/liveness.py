"""Who a process is, and whether it still runs: the owner of something left behind.

Shared-memory segments (:mod:`hotset.cachestore.shm_gc`), temporary folders of
packs and package runs (:mod:`hotset.data.leftovers`) and the cache-write turn
of DataLoader workers (:mod:`hotset.torch.sequencer`) each record a process and
later ask whether it died. A process is named by three numbers:

* its pid;
* its start time, field 22 of ``/proc/<pid>/stat`` (clock ticks since boot),
  so a pid the kernel has since handed to another process is not mistaken for
  the owner;
* the inode of its pid namespace (``/proc/self/ns/pid``), because containers
  sharing a file system see each other's files but not each other's pids: an
  owner in another namespace is *unknown*, never dead.

It sits below every package (it imports nothing of hotset), so that the data
layer and the caches can both ask without importing each other.
"""

from __future__ import annotations

import os
from typing import Literal

__all__ = ["OwnerState", "owner_identity", "owner_state", "process_start_time"]

OwnerState = Literal["alive", "dead", "unknown"]


def process_start_time(pid: int) -> int | None:
    """Field 22 of ``/proc/<pid>/stat`` (start time in clock ticks), or None if unreadable."""
    fields = _stat_fields(pid)
    if fields is None or len(fields) < 20:
        return None
    try:
        return int(fields[19])
    except ValueError:
        return None


def _stat_fields(pid: int) -> list[str] | None:
    """Fields 3.. of ``/proc/<pid>/stat``; the command name (field 2) may hold spaces."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    _, _, rest = raw.rpartition(b")")
    return rest.decode("ascii", "replace").split()


def _pid_namespace() -> int:
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


_IDENTITY: dict[int, tuple[int, int, int]] = {}


def owner_identity() -> tuple[int, int, int]:
    """(pid, start time, pid-namespace inode) of this process; 0 where unknowable."""
    pid = os.getpid()
    ident = _IDENTITY.get(pid)  # keyed by pid: a forked child computes its own
    if ident is None:
        ident = (pid, process_start_time(pid) or 0, _pid_namespace())
        _IDENTITY[pid] = ident
    return ident


def owner_state(pid: int, start: int, pidns: int) -> tuple[OwnerState, str]:
    """Whether the process (pid, start, pidns) still runs, with a reason for humans.

    Only a definite answer in this pid namespace is ``dead``; anything doubtful
    is ``alive`` or ``unknown``, because a wrong ``dead`` destroys a live cache.
    """
    if pid <= 0:
        return "unknown", "no owner recorded"
    if pidns and pidns != _pid_namespace():
        return "unknown", "owner in another pid namespace"
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return "dead", "no such process"
    except PermissionError:
        pass  # exists, another user's
    fields = _stat_fields(pid)
    if fields is None:
        # No /proc (not Linux), it hides the pid, or it exited a moment ago: the
        # safe answer is alive; the next scan looks again.
        return "alive", "process exists"
    if fields and fields[0] in ("Z", "X"):
        return "dead", "zombie (exited, not yet reaped)"
    if start:
        try:
            now = int(fields[19])
        except (IndexError, ValueError):
            return "alive", "process exists"
        if now != start:
            return "dead", f"pid reused (start {now} != {start})"
    return "alive", "running"
