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
"""

from __future__ import annotations

import contextlib
import gc
import os
import secrets
import sys
from multiprocessing import shared_memory
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.cachestore import shm_layout as layout
from hotset.cachestore.shm_gc import owner_identity, reclaim_stale_segments, segment_name
from hotset.errors import HotsetError
from hotset.units import parse_bytes

U64Array = npt.NDArray[np.uint64]


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
        header = np.ndarray((layout.HEADER_BYTES // 8,), dtype=np.uint64, buffer=buf)
        self.header: U64Array = header
        self.closed = False

    def map_tables(self) -> None:
        """Views on the slot table, the free table and the arena, as the header sizes them."""
        n_slots = int(self.header[layout.H_N_SLOTS])
        free_cap = int(self.header[layout.H_FREE_CAP])
        arena_size = int(self.header[layout.H_ARENA])
        self.n_slots = n_slots
        self.slot_base = layout.HEADER_BYTES
        free_base = layout.HEADER_BYTES + layout.SLOT_BYTES * n_slots
        self.arena_base = layout.arena_base(n_slots, free_cap)
        if self.shm.size < self.arena_base + arena_size:
            raise HotsetError(
                f"shared-memory cache {self.name!r} is truncated: {self.shm.size} bytes, "
                f"layout needs {self.arena_base + arena_size}"
            )
        buf = self.buf
        self.slots: U64Array = np.ndarray((n_slots, 4), np.uint64, buf, self.slot_base)
        self.free_off: U64Array = np.ndarray((free_cap,), np.uint64, buf, free_base)
        self.free_len: U64Array = np.ndarray((free_cap,), np.uint64, buf, free_base + 8 * free_cap)
        self.arena: npt.NDArray[np.uint8] = np.ndarray(
            (arena_size,), np.uint8, buf, self.arena_base
        )

    def release(self) -> None:
        """Drop the views, unmap, and unlink if this process created the segment."""
        if self.closed:
            return
        self.closed = True
        for attr in ("header", "slots", "free_off", "free_len", "arena", "buf"):
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


def create_segment(
    capacity_bytes: int | str | None,
    n_slots: int | None,
    name: str | None,
    arena_slack: float,
) -> Segment:
    """A new segment for ``n_slots`` samples and ``capacity_bytes`` of payload, empty.

    Validates the options (errors name the bad value), reclaims dead owners'
    segments, then creates and formats the segment: header, zeroed slots, and
    one free extent spanning the arena.
    """
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
    free_cap = layout.free_cap(n_slots)
    arena_size = capacity + int(capacity * arena_slack)
    arena_base = layout.arena_base(n_slots, free_cap)
    # Reclaim what killed owners left behind before taking more memory; a
    # failure here must never stop the cache from being created.
    with contextlib.suppress(OSError):
        reclaim_stale_segments()
    seg_name = name if name is not None else segment_name(secrets.token_hex(6))
    try:
        shm = shared_memory.SharedMemory(
            name=seg_name, create=True, size=max(1, arena_base + arena_size)
        )
    except FileExistsError:
        raise HotsetError(f"shared-memory segment {seg_name!r} already exists") from None
    seg = Segment(shm, owner=True)
    _format(seg, n_slots=n_slots, capacity=capacity, arena_size=arena_size, free_cap=free_cap)
    return seg


def _format(seg: Segment, *, n_slots: int, capacity: int, arena_size: int, free_cap: int) -> None:
    """Write a fresh header (owner identity included) and an empty index."""
    header = seg.header
    seg.buf[: len(layout.MAGIC)] = layout.MAGIC
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


def open_segment(name: str, capacity_bytes: int | str | None, n_slots: int | None) -> Segment:
    """Attach to the existing segment ``name``, checking magic, version and given sizes."""
    shm = attach_segment(name)
    seg = Segment(shm, owner=False)
    if bytes(seg.buf[: len(layout.MAGIC)]) != layout.MAGIC:
        seg.release()
        raise HotsetError(f"shared-memory segment {name!r} is not a hotset cache")
    if int(seg.header[layout.H_VERSION]) != layout.VERSION:
        version = int(seg.header[layout.H_VERSION])
        seg.release()
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
            seg.release()
            raise HotsetError(f"shared-memory cache {name!r} has {label}={actual}, not {given!r}")
    seg.map_tables()
    return seg


def attach_segment(name: str) -> shared_memory.SharedMemory:
    """Open an existing segment without letting this process's exit destroy it.

    Before Python 3.13 attaching registers the segment with the resource
    tracker, and a tracker this process starts itself unlinks the segment when
    this process exits. A DataLoader worker shares its parent's tracker (fork
    and spawn both hand it down), where the registration is a harmless
    duplicate; only a private tracker is told to forget the segment.
    """
    try:
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
