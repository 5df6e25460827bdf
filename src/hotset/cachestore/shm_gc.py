"""Find and reclaim shared-memory segments whose owner died.

Why this exists. A :class:`~hotset.cachestore.shm.SharedMemoryCache` owner
unlinks its segment at close, at exit and on SIGTERM, and Python's resource
tracker unlinks it when the owner alone is killed. Nothing runs when the whole
process group is SIGKILLed (what Slurm, docker and ``timeout`` do): the tracker
dies with the owner and ``capacity x 1.25`` bytes stay in ``/dev/shm`` until
reboot. So every segment says who owns it, and anyone can later tell a dead
owner's segment from a live one and unlink it.

Owner identity. A process is named by three numbers:

* its pid;
* its start time, field 22 of ``/proc/<pid>/stat`` (clock ticks since boot),
  so a pid the kernel has since handed to another process is not mistaken for
  the owner;
* the inode of its pid namespace (``/proc/self/ns/pid``), because containers
  sharing one ``/dev/shm`` (``--ipc=host``) see each other's segments but not
  each other's pids: an owner in another namespace is *unknown*, never dead.

The identity is written twice: in the segment name,
``hotset_<pid>_<start>_<pidns>_<12 hex>``, so a scan reads directory entries
only and even a segment whose owner died before writing its header is
recognised; and in header words 10-12 (u64 pid, start, pidns), so a segment
created with a caller-chosen ``name=`` still says who owns it (such segments
are not scanned automatically, see below). The header wins where both exist.

A segment the local ranks of a job share (:mod:`hotset.cachestore.shm_members`)
outlives its creator: it lists its members (the ranks' identities) after its
arena, and belongs to them, not to the creator. It is alive while any member
is, and *dead* only once every member is; its name still names the creator.

What is touched. Scans look only at regular files in ``/dev/shm`` whose name
starts with ``hotset_``. A segment is reclaimed only when its owner is *dead*:
the pid does not exist, is a zombie, or now belongs to a process with another
start time, in this pid namespace. Segments of live owners, of owners in other
namespaces, and of unknown owners (segments made by hotset before owner names,
``hotset_<12 hex>``) are listed but never unlinked automatically; ``hotset cache
rm --force NAME`` removes those. Unlinking only removes the name: processes
still mapping the segment (orphaned workers) keep their pages until they exit.

Not Linux: there is no ``/dev/shm`` to scan and no start time to read, so the
scans find nothing and names carry start 0 and namespace 0.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import struct
from dataclasses import dataclass

from hotset.cachestore.shm_layout import (
    H_CLOSED,
    H_MEMBERS,
    H_MEMBERS_CAP,
    H_OWNER_PID,
    HEADER_BYTES,
    MAGIC,
    MEMBER_BYTES,
)
from hotset.liveness import OwnerState, owner_identity, owner_state, process_start_time

__all__ = [
    "SHM_DIR",
    "SegmentInfo",
    "list_segments",
    "members_state",
    "owner_identity",
    "owner_state",
    "process_start_time",
    "reclaim_stale_segments",
    "remove_segment",
    "segment_info",
    "segment_name",
]

SHM_DIR = "/dev/shm"
SEGMENT_PREFIX = "hotset_"
# From the segment's layout: magic in bytes 0-8, owner in u64 words 10-12.
HEADER_MAGIC = MAGIC
HEADER_OWNER_WORD = H_OWNER_PID
_OWNER = struct.Struct("<3Q")
_U64 = struct.Struct("<Q")
#: more members than any node holds ranks: a header claiming more is not trusted
_MAX_MEMBERS = 1 << 16
_NAME_OWNER = re.compile(r"^hotset_(\d{1,10})_(\d{1,20})_(\d{1,20})_[0-9a-f]+$")


@dataclass(frozen=True)
class SegmentInfo:
    """One hotset segment in ``/dev/shm`` and what is known about its owner."""

    name: str
    size_bytes: int
    owner_pid: int | None
    owner_start: int | None
    owner_pidns: int | None
    state: OwnerState
    reason: str


def segment_name(token: str) -> str:
    """The name of a new segment owned by this process: ``hotset_<pid>_<start>_<pidns>_<token>``."""
    pid, start, pidns = owner_identity()
    return f"{SEGMENT_PREFIX}{pid}_{start}_{pidns}_{token}"


Identity = tuple[int, int, int]


def _read_header_owner(path: str) -> tuple[Identity | None, list[Identity] | None]:
    """The owner words of a hotset header (None when absent: short file, no magic,
    unset) and, for a node's cache, its current members (None: no member table)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None, None
    try:
        head = os.pread(fd, HEADER_BYTES, 0)
        if len(head) < HEADER_BYTES or not head.startswith(HEADER_MAGIC):
            return None, None
        owner: Identity | None = _OWNER.unpack_from(head, 8 * HEADER_OWNER_WORD)
        words = [_U64.unpack_from(head, 8 * w)[0] for w in (H_MEMBERS, H_MEMBERS_CAP, H_CLOSED)]
        members = _read_members(fd, *words)
    except OSError:
        return None, None
    finally:
        os.close(fd)
    return (owner if owner and owner[0] else None), members


def _read_members(fd: int, offset: int, count: int, closed: int) -> list[Identity] | None:
    """The members still in the table (pid set), [] once closed; None without a table."""
    if offset == 0 or count == 0 or count > _MAX_MEMBERS:
        return None
    if closed:
        return []
    raw = os.pread(fd, MEMBER_BYTES * count, offset)
    ends = range(0, len(raw) - MEMBER_BYTES + 1, MEMBER_BYTES)
    entries: list[Identity] = [_OWNER.unpack_from(raw, i) for i in ends]
    return [e for e in entries if e[0]]


def members_state(members: list[Identity]) -> tuple[OwnerState, str]:
    """Whether a node's cache still has a rank that may use it: alive while any
    member is, unknown while any may be, dead once all are (or all left)."""
    if not members:
        return "dead", "every rank left"
    states = [owner_state(*m)[0] for m in members]
    alive = states.count("alive")
    if alive:
        return "alive", f"{alive} of its {len(members)} ranks running"
    if "unknown" in states:
        return "unknown", "a rank in another pid namespace"
    return "dead", f"its {len(members)} ranks exited"


def segment_info(name: str, shm_dir: str = SHM_DIR) -> SegmentInfo | None:
    """What is known about segment ``name``; None if it is not a regular file there."""
    if "/" in name or name in ("", ".", ".."):
        return None
    path = os.path.join(shm_dir, name)
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    owner, members = _read_header_owner(path)
    if owner is None:
        match = _NAME_OWNER.match(name)
        if match is not None:
            owner = (int(match[1]), int(match[2]), int(match[3]))
    if owner is None:
        return SegmentInfo(name, st.st_size, None, None, None, "unknown", "no owner recorded")
    # A node's cache belongs to its members (its creator may be gone, the others not).
    state, reason = owner_state(*owner) if members is None else members_state(members)
    return SegmentInfo(name, st.st_size, owner[0], owner[1], owner[2], state, reason)


def list_segments(shm_dir: str = SHM_DIR) -> list[SegmentInfo]:
    """Every ``hotset_*`` regular file in ``shm_dir``, sorted by name; [] if there is none."""
    try:
        names = [n for n in os.listdir(shm_dir) if n.startswith(SEGMENT_PREFIX)]
    except OSError:
        return []
    infos = (segment_info(n, shm_dir) for n in sorted(names))
    return [info for info in infos if info is not None]


def reclaim_stale_segments(shm_dir: str = SHM_DIR) -> list[SegmentInfo]:
    """Unlink every hotset segment whose owner is dead; return those this call removed.

    Cheap enough to run at every cache creation: one directory listing, and per
    ``hotset_*`` file one ``lstat``, one 104-byte read and one ``kill(pid, 0)``.
    A segment another process unlinks first, or one this user may not unlink,
    is skipped silently.
    """
    removed: list[SegmentInfo] = []
    for info in list_segments(shm_dir):
        if info.state != "dead":
            continue
        with contextlib.suppress(FileNotFoundError, PermissionError):
            os.unlink(os.path.join(shm_dir, info.name))
            removed.append(info)
    return removed


def remove_segment(name: str, *, force: bool = False, shm_dir: str = SHM_DIR) -> SegmentInfo:
    """Unlink one hotset segment; refuse a live or unknown owner's unless ``force``.

    Raises :class:`~hotset.errors.HotsetError` when ``name`` is no hotset
    segment (neither ``hotset_*`` nor carrying the header magic) or is refused.
    """
    from hotset.errors import HotsetError

    info = segment_info(name, shm_dir)
    if info is None:
        raise HotsetError(f"no shared-memory segment {name!r} in {shm_dir}")
    path = os.path.join(shm_dir, name)
    if not name.startswith(SEGMENT_PREFIX) and not _has_magic(path):
        raise HotsetError(f"{name!r} is not a hotset segment; not touching it")
    if info.state != "dead" and not force:
        who = f"pid {info.owner_pid}" if info.owner_pid is not None else "an unknown owner"
        raise HotsetError(
            f"segment {name!r} belongs to {who} ({info.state}: {info.reason}); "
            "pass --force to remove it anyway"
        )
    try:
        os.unlink(path)
    except FileNotFoundError:
        raise HotsetError(f"segment {name!r} vanished before it could be removed") from None
    return info


def _has_magic(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(len(HEADER_MAGIC)) == HEADER_MAGIC
    except OSError:
        return False
