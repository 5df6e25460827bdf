"""One shared-memory segment: create or attach it, map its tables, release it.

The owner (the main process) creates a ``multiprocessing.shared_memory``
segment and writes its header (:mod:`hotset.cachestore.shm_layout`); a worker
attaches by name and checks the header before trusting any offset in it. The
:class:`Segment` holds the mapping and every numpy view on it so that they are
released together, and so that a finalizer can hold the segment without holding
the cache that uses it.

Names. A segment the cache names itself is ``hotset_<pid>_<start>_<pidns>_<token>``
(:func:`hotset.cachestore.shm_gc.segment_name`), and every segment carries the
same owner identity in header words 10-12: whoever finds it later can tell a dead
owner's segment from a live one. Creating one first unlinks what dead owners left.

A node's cache (the local ranks of a job share it, :mod:`hotset.cachestore.shm_members`)
is created with a member table after its arena and belongs to its members, not to
its creator: no process registers it with Python's resource tracker (which would
unlink it when that one process exits, under the other ranks' feet), and it is
unlinked by the last member that leaves. It is formatted under the write lock
and its magic written last, so a rank attaching while it is made waits for it.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import os
import secrets
import sys
import threading
from collections.abc import Iterator, Sequence
from multiprocessing import shared_memory
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.cachestore import shm_layout as layout
from hotset.cachestore.shm_gc import owner_identity, reclaim_stale_segments, segment_name
from hotset.cachestore.shm_room import check_room
from hotset.errors import HotsetError
from hotset.units import parse_bytes

U64Array = npt.NDArray[np.uint64]
#: a process: (pid, /proc start time, pid-namespace inode)
Identity = tuple[int, int, int]


class Segment:
    """The mapping and the array views on it, released together.

    Kept apart from :class:`~hotset.cachestore.shm.SharedMemoryCache` so the
    finalizer can hold it without holding the cache, and can drop every view
    before unmapping.
    """

    def __init__(self, shm: shared_memory.SharedMemory, *, owner: bool) -> None:
        self.shm = shm
        self.name = shm.name
        self.owner_pid = os.getpid() if owner else -1
        buf = shm.buf
        assert buf is not None  # typeshed: None only after close()
        self.buf: memoryview = buf
        #: the bytes mapped. Not ``shm.size``: attaching, SharedMemory reads the size
        #: (fstat) and then maps; a creator that sizes the segment in between leaves
        #: ``shm.size`` 0 while mmap maps the whole, now sized, file (a rank joining a
        #: node's cache failed as "truncated: 0 bytes" that way)
        self.size = len(buf)
        header = np.ndarray((layout.HEADER_BYTES // 8,), dtype=np.uint64, buffer=buf)
        self.header: U64Array = header
        self.closed = False
        #: the process that is a member of this node's cache through this handle
        #: (it leaves at release); 0: none (a cache of one loader, or a worker)
        self.member_pid = 0
        #: a node's cache (a member table; see the module docstring): set by map_tables
        self.node = False

    def map_tables(self) -> None:
        """Views on the slot table, the free table and the arena, as the header sizes them."""
        n_slots = int(self.header[layout.H_N_SLOTS])
        free_cap = int(self.header[layout.H_FREE_CAP])
        arena_size = int(self.header[layout.H_ARENA])
        self.n_slots = n_slots
        self.slot_base = layout.HEADER_BYTES
        free_base = layout.HEADER_BYTES + layout.SLOT_BYTES * n_slots
        self.arena_base = layout.arena_base(n_slots, free_cap)
        if self.size < self.arena_base + arena_size:
            raise HotsetError(
                f"shared-memory cache {self.name!r} is truncated: {self.size} bytes, "
                f"layout needs {self.arena_base + arena_size}"
            )
        buf = self.buf
        self.slots: U64Array = np.ndarray((n_slots, 4), np.uint64, buf, self.slot_base)
        self.free_off: U64Array = np.ndarray((free_cap,), np.uint64, buf, free_base)
        self.free_len: U64Array = np.ndarray((free_cap,), np.uint64, buf, free_base + 8 * free_cap)
        self.arena: npt.NDArray[np.uint8] = np.ndarray(
            (arena_size,), np.uint8, buf, self.arena_base
        )
        members_at = int(self.header[layout.H_MEMBERS])
        n_members = int(self.header[layout.H_MEMBERS_CAP])
        if members_at:
            if self.size < members_at + layout.members_bytes(n_members):
                raise HotsetError(f"shared-memory cache {self.name!r} is truncated (members)")
            self.members: U64Array = np.ndarray((n_members, 3), np.uint64, buf, members_at)
            self.node = True

    def release(self) -> None:
        """Drop the views, unmap, and unlink if this process created the segment."""
        if self.closed:
            return
        self.closed = True
        for attr in ("header", "slots", "free_off", "free_len", "arena", "members", "buf"):
            self.__dict__.pop(attr, None)
        try:
            self.shm.close()
        except BufferError:
            # A stray view (say, in a traceback) still pins the mapping; collect and retry.
            gc.collect()
            with contextlib.suppress(BufferError):
                self.shm.close()
        if self.owner_pid == os.getpid():
            with contextlib.suppress(FileNotFoundError):
                self.shm.unlink()

    def unlink_node(self) -> None:
        """Remove a node's cache from ``/dev/shm`` (its last member left); never tracked."""
        with contextlib.suppress(FileNotFoundError):
            unlink_untracked(self.shm)


def create_segment(
    capacity_bytes: int | str | None,
    n_slots: int | None,
    name: str | None,
    arena_slack: float,
    members: Sequence[Identity] = (),
) -> Segment:
    """A new segment for ``n_slots`` samples and ``capacity_bytes`` of payload, empty.

    Validates the options (errors name the bad value), reclaims dead owners'
    segments, then creates and formats the segment: header, zeroed slots, and
    one free extent spanning the arena. ``members`` (the identities of the
    ranks sharing it) makes it a node's cache: the table follows the arena.
    """
    capacity, n_slots = _checked_sizes(capacity_bytes, n_slots, arena_slack)
    free_cap = layout.free_cap(n_slots)
    arena_size = capacity + int(capacity * arena_slack)
    arena_base = layout.arena_base(n_slots, free_cap)
    members_at = layout.align(arena_base + arena_size, 8) if members else 0
    size = segment_size(capacity, n_slots, arena_slack, len(members))
    # Reclaim what killed owners left behind before taking more memory; a
    # failure here must never stop the cache from being created.
    with contextlib.suppress(OSError):
        reclaim_stale_segments()
    check_room(size, capacity=capacity, name=name)  # a bus error later, a clear error now
    seg_name = name if name is not None else segment_name(secrets.token_hex(6))
    try:
        if members:
            shm = open_untracked(seg_name, create=True, size=size)
        else:
            shm = shared_memory.SharedMemory(name=seg_name, create=True, size=max(1, size))
    except FileExistsError:
        raise HotsetError(f"shared-memory segment {seg_name!r} already exists") from None
    seg = Segment(shm, owner=not members)  # a node's cache is its members'
    fd: int = shm._fd  # type: ignore[attr-defined]
    fcntl.lockf(fd, fcntl.LOCK_EX)  # a rank attaching meanwhile waits for the magic
    try:
        _format(seg, n_slots=n_slots, capacity=capacity, arena_size=arena_size, free_cap=free_cap)
        if members:
            _format_members(seg, members_at, members)
        seg.buf[: len(layout.MAGIC)] = layout.MAGIC  # last: the segment is ready
    finally:
        fcntl.lockf(fd, fcntl.LOCK_UN)
    return seg


def segment_size(capacity: int, n_slots: int, arena_slack: float, n_members: int = 0) -> int:
    """Bytes of a segment for ``n_slots`` samples and ``capacity`` bytes of payload (a
    node's cache has a table of ``n_members`` after its arena)."""
    free_cap = layout.free_cap(n_slots)
    arena_end = layout.arena_base(n_slots, free_cap) + capacity + int(capacity * arena_slack)
    if not n_members:
        return arena_end
    return layout.align(arena_end, 8) + layout.members_bytes(n_members)


def _checked_sizes(
    capacity_bytes: int | str | None, n_slots: int | None, arena_slack: float
) -> tuple[int, int]:
    """(capacity, n_slots) of a new segment, each checked (errors name the bad value)."""
    if capacity_bytes is None:
        raise HotsetError("shared-memory cache: capacity_bytes is required to create one")
    capacity = parse_bytes(capacity_bytes, name="capacity_bytes")
    if isinstance(n_slots, bool) or not isinstance(n_slots, int) or n_slots < 1:
        raise HotsetError(
            f"shared-memory cache: n_slots must be a positive int (the dataset size), "
            f"got {n_slots!r}"
        )
    if (
        isinstance(arena_slack, bool)
        or not isinstance(arena_slack, int | float)
        or not 0 <= arena_slack <= 4
    ):
        raise HotsetError(f"arena_slack must be a number in [0, 4], got {arena_slack!r}")
    return capacity, n_slots


def _format_members(seg: Segment, at: int, members: Sequence[Identity]) -> None:
    """The member table of a node's cache: every rank that will use it, registered up
    front (a rank slow to attach is a member already, so nobody unlinks under it)."""
    header = seg.header
    header[layout.H_MEMBERS_CAP] = len(members)
    header[layout.H_CLOSED] = 0
    header[layout.H_MEMBERS] = at
    seg.map_tables()
    seg.members[:] = np.asarray(members, dtype=np.uint64).reshape(len(members), 3)


def _format(seg: Segment, *, n_slots: int, capacity: int, arena_size: int, free_cap: int) -> None:
    """Write a fresh header (owner identity included) and an empty index; the magic is
    the caller's to write, last."""
    header = seg.header
    header[layout.H_VERSION] = layout.VERSION
    header[layout.H_N_SLOTS] = n_slots
    header[layout.H_CAPACITY] = capacity
    header[layout.H_ARENA] = arena_size
    header[layout.H_FREE_CAP] = free_cap
    header[layout.H_WRITER] = 0
    owner = owner_identity()
    header[layout.H_OWNER_PID], header[layout.H_OWNER_START], header[layout.H_OWNER_NS] = owner
    seg.map_tables()
    seg.slots[:] = 0
    if arena_size:
        seg.free_off[0] = 0
        seg.free_len[0] = arena_size
        header[layout.H_N_FREE] = 1


def open_segment(
    name: str, capacity_bytes: int | str | None, n_slots: int | None, *, node: bool = False
) -> Segment:
    """Attach to the existing segment ``name``, checking magic, version and given sizes.

    ``node``: a node's cache, attached without the resource tracker (module docstring).
    """
    shm = attach_segment(name, track=not node)
    seg = Segment(shm, owner=False)
    try:
        check_header(seg, capacity_bytes, n_slots)
    except BaseException:
        seg.release()
        raise
    return seg


def check_header(seg: Segment, capacity_bytes: int | str | None, n_slots: int | None) -> None:
    """Magic, version and the sizes given (None: any) of an attached segment; map it."""
    name = seg.name
    if bytes(seg.buf[: len(layout.MAGIC)]) != layout.MAGIC:
        raise HotsetError(f"shared-memory segment {name!r} is not a hotset cache")
    if int(seg.header[layout.H_VERSION]) != layout.VERSION:
        version = int(seg.header[layout.H_VERSION])
        raise HotsetError(f"shared-memory cache {name!r} has layout version {version}")
    checks = (
        ("capacity_bytes", capacity_bytes, layout.H_CAPACITY),
        ("n_slots", n_slots, layout.H_N_SLOTS),
    )
    for label, given, field in checks:
        if given is None:
            continue
        expected = parse_bytes(given, name=label) if label == "capacity_bytes" else given
        actual = int(seg.header[field])
        if expected != actual:
            raise HotsetError(f"shared-memory cache {name!r} has {label}={actual}, not {given!r}")
    seg.map_tables()


def attach_segment(name: str, *, track: bool = True) -> shared_memory.SharedMemory:
    """Open an existing segment without letting this process's exit destroy it.

    Before Python 3.13 attaching registers the segment with the resource
    tracker, and a tracker this process starts itself unlinks the segment when
    this process exits. A DataLoader worker shares its parent's tracker (fork
    and spawn both hand it down), where the registration is a harmless
    duplicate; only a private tracker is told to forget the segment. A node's
    cache (``track=False``) is never registered at all: no process's tracker
    may unlink it (module docstring).
    """
    try:
        if not track:
            return open_untracked(name, create=False)
        if sys.version_info >= (3, 13):
            return shared_memory.SharedMemory(name=name, create=False, track=False)
        from multiprocessing import resource_tracker

        tracker: Any = resource_tracker._resource_tracker
        shared_tracker = tracker._fd is not None
        shm = shared_memory.SharedMemory(name=name, create=False)
        if not shared_tracker:
            resource_tracker.unregister(shm._name, "shared_memory")  # type: ignore[attr-defined]
        return shm
    except FileNotFoundError:
        raise HotsetError(f"no shared-memory cache named {name!r} (closed by its owner?)") from None


_UNTRACKED = threading.Lock()


def open_untracked(name: str, *, create: bool, size: int = 0) -> shared_memory.SharedMemory:
    """Create or attach shared memory without telling the resource tracker.

    Python 3.13 has ``track=False`` for this; before it the tracker's register
    and unregister are made no-ops for the call (:func:`_no_tracker`). A segment
    so opened is cleaned up by its members (:mod:`hotset.cachestore.shm_members`)
    or, once they are all dead, by :mod:`hotset.cachestore.shm_gc`.
    """
    if sys.version_info >= (3, 13):
        return shared_memory.SharedMemory(name=name, create=create, size=size, track=False)
    with _no_tracker():
        return shared_memory.SharedMemory(name=name, create=create, size=size)


def unlink_untracked(shm: shared_memory.SharedMemory) -> None:
    """Unlink a segment :func:`open_untracked` opened (the tracker never knew it)."""
    if sys.version_info >= (3, 13):
        shm.unlink()  # opened with track=False: no unregister
        return
    with _no_tracker():
        shm.unlink()


@contextlib.contextmanager
def _no_tracker() -> Iterator[None]:
    """The resource tracker's register and unregister as no-ops, for one call.

    Serialised here; another thread of this process opening shared memory of its
    own at that very moment would go untracked too (its segment then leaks only
    if the process dies without closing it).
    """
    from multiprocessing import resource_tracker

    with _UNTRACKED:
        register, unregister = resource_tracker.register, resource_tracker.unregister
        resource_tracker.register = resource_tracker.unregister = _ignore  # type: ignore[assignment]
        try:
            yield
        finally:
            resource_tracker.register, resource_tracker.unregister = register, unregister


def _ignore(name: str, rtype: str) -> None:
    """The resource tracker's register/unregister, for a segment it must not know of."""
