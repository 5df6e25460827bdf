"""The ranks that share a node's cache: attaching as one, leaving, and the last one out.

A node's cache is one shared-memory segment that the local ranks of a job use
together (:mod:`hotset.cachestore.shm_node` says how they agree on it). Its
member table (after the arena, :mod:`hotset.cachestore.shm_layout`) lists every
rank by its identity (pid, start time, pid namespace: :mod:`hotset.liveness`),
all written by the rank that creates it, before any other rank attaches. So a
rank is a member from the start, and nothing can unlink the segment under a
rank that has not attached yet.

* **Attaching** (:func:`attach_member`): a rank waits for the segment to exist
  and be formatted (the creator writes the magic last, under the write lock),
  checks its sizes and that it is listed, and gives up with a
  :class:`~hotset.errors.HotsetError` if the creator died first or the wait
  passes its limit.
* **Leaving** (:func:`leave`): a member's handle clears its own entry under the
  write lock at close, at exit, or on SIGTERM; the member that finds no other
  member alive marks the segment closed and unlinks it: *last one out*. A
  member SIGKILLed never leaves, but it is dead, so the others do not wait on
  it; if every member is killed, :mod:`hotset.cachestore.shm_gc` reclaims the
  segment (it is dead once all its members are).

What a dying rank cannot do is corrupt the others' view: its writes were under
the write lock and the per-slot seqlock, so a write it left half done is
repaired by the next writer and never read (:mod:`hotset.cachestore.shm_index`),
and its entries stay valid bytes under their keys. Workers of a rank attach as
the rank's handles do, but are no members: a member is a rank's main process.
"""

from __future__ import annotations

import fcntl
import os
import time

import numpy as np

from hotset.cachestore import shm_index as index
from hotset.cachestore import shm_layout as layout
from hotset.cachestore.shm_liveness import write_lock
from hotset.cachestore.shm_segment import (
    Identity,
    Segment,
    check_header,
    open_untracked,
)
from hotset.errors import HotsetError
from hotset.liveness import owner_identity, owner_state

__all__ = ["JOIN_TIMEOUT_S", "attach_member", "become_member", "leave", "live_members"]

#: how long a rank waits for the node's cache to be created before it gives up
#: (the creating rank's death ends the wait at once)
JOIN_TIMEOUT_S = 600.0


def live_members(seg: Segment) -> list[Identity]:
    """The members still listed (pid set) whose process is not known to be dead."""
    rows: list[Identity] = [
        (int(p), int(s), int(n)) for p, s, n in seg.members.tolist() if int(p) != 0
    ]
    return [m for m in rows if owner_state(*m)[0] != "dead"]


def become_member(seg: Segment) -> None:
    """This process's handle is a member's: it leaves when released. Refused when the
    table does not list this process (it is not one of the ranks that agreed)."""
    me = owner_identity()
    rows = {tuple(int(v) for v in row) for row in seg.members.tolist()}
    if me not in rows:
        raise HotsetError(
            f"shared-memory cache {seg.name!r} is the cache of other ranks (this process, "
            f"pid {me[0]}, is not among its members)"
        )
    if int(seg.header[layout.H_CLOSED]):
        raise HotsetError(f"shared-memory cache {seg.name!r} was closed by its other ranks")
    seg.member_pid = os.getpid()


def leave(seg: Segment) -> bool:
    """Take this member out of the table; True when no member is left alive (the
    caller unlinks the segment: last one out). Marked closed first, so a late
    attach sees it."""
    me = np.asarray(owner_identity(), dtype=np.uint64)
    with write_lock(seg, repair=index.recover):
        mine = (seg.members == me).all(axis=1)
        seg.members[mine, 0] = 0  # the pid first: a scan never sees half an entry
        seg.members[mine] = 0
        if live_members(seg):
            return False
        seg.header[layout.H_CLOSED] = 1
    return True


def attach_member(
    name: str,
    *,
    capacity_bytes: int,
    n_slots: int,
    creator: Identity,
    timeout_s: float = JOIN_TIMEOUT_S,
) -> Segment:
    """Attach to the node's cache ``name`` as a member, once its creator has made it.

    Waits (polling, up to 0.1 s apart) while the segment does not exist or is not
    formatted yet; a :class:`HotsetError` once the creator is dead or after
    ``timeout_s``, or when the segment holds other sizes than this rank's loader
    asks for (the ranks gave different budgets or data).
    """
    deadline = time.monotonic() + timeout_s
    delay = 0.005
    while True:
        seg = _ready(name)
        if seg is not None:
            try:
                check_header(seg, capacity_bytes, n_slots)
                become_member(seg)
            except BaseException:
                seg.release()
                raise
            return seg
        state, why = owner_state(*creator)
        if state == "dead":
            raise HotsetError(
                f"the rank that creates this node's cache (pid {creator[0]}) exited ({why}) "
                f"before it made {name!r}; see that rank's error"
            )
        if time.monotonic() > deadline:
            raise HotsetError(
                f"waited {timeout_s:.0f} s for this node's cache {name!r}, which the rank with "
                f"pid {creator[0]} creates: every rank must build its loader at the same point"
            )
        time.sleep(delay)
        delay = min(0.1, delay * 2)


def _ready(name: str) -> Segment | None:
    """The segment attached once it exists and its magic is written; else None."""
    try:
        shm = open_untracked(name, create=False)
    except (FileNotFoundError, ValueError):  # not there yet, or not sized yet (empty)
        return None
    seg = Segment(shm, owner=False)
    fd: int = shm._fd  # type: ignore[attr-defined]
    fcntl.lockf(fd, fcntl.LOCK_EX)  # the creator formats under it: wait for the magic
    try:
        ready = bytes(seg.buf[: len(layout.MAGIC)]) == layout.MAGIC
    finally:
        fcntl.lockf(fd, fcntl.LOCK_UN)
    if not ready:
        seg.release()
        return None
    return seg
