"""The byte layout of a shared-memory cache segment, in one place.

Other processes read this layout: DataLoader workers attach to the segment, and
``hotset cache ls/gc`` (:mod:`hotset.cachestore.shm_gc`) read the owner words of
its header. So the numbers here are a format, not an implementation detail:
changing one needs a new :data:`VERSION`.

Layout of the segment (all integers little-endian u64)::

    header   128 bytes   magic "HOTSHM01", version, n_slots, capacity, arena size,
                         free-table capacity, used bytes, free extents, writer pid,
                         live entries, owner pid, owner start time, owner pid namespace
    slots    32 B x n_slots          per sample id: seq, offset, size + 1 (0 = empty), hash
    free     16 B x free_cap         free extents of the arena, sorted by offset
    arena    capacity x (1 + slack)  payload bytes, unaligned, never re-encoded
    members  24 B x local ranks      (a node's cache only) pid, start time, pid namespace

The index overhead is therefore ``128 + 32 * n_slots + 16 * free_cap`` bytes with
``free_cap = min(n_slots + 1, 65536)`` (about 33 MB for a million samples) and is
*not* counted in ``capacity_bytes``, which bounds payload bytes only. The arena
is ``capacity_bytes * (1 + arena_slack)``: the slack is room against
fragmentation (tmpfs pages cost memory only once touched, and the payload in the
arena never exceeds ``capacity_bytes``).

A cache shared by the local ranks of a job (:mod:`hotset.cachestore.shm_members`)
appends a member table after the arena: one (pid, start time, pid namespace)
entry per rank, 0 when that rank has left. Header word 13 holds the table's
offset (0: a cache of one loader, no table), word 14 its entries and word 15 is
set once the last member left (the name is being unlinked). A version-1 reader
ignores the three words, as it ignores the owner words, so the version did not
change; the index overhead of a node's cache is ``24`` bytes per local rank more.

Pure constants and arithmetic (no numpy), so the segment scanner can import it.
"""

from __future__ import annotations

import struct

__all__ = ["DEFAULT_ARENA_SLACK", "index_overhead_bytes"]

MAGIC = b"HOTSHM01"
VERSION = 1
HEADER_BYTES = 128
SLOT_BYTES = 32
EXTENT_BYTES = 16
# Header fields, as indexes into the header viewed as u64.
H_VERSION, H_N_SLOTS, H_CAPACITY, H_ARENA, H_FREE_CAP = 1, 2, 3, 4, 5
H_USED, H_N_FREE, H_WRITER, H_LIVE = 6, 7, 8, 9
# Who created the segment (pid, /proc start time, pid-namespace inode), for shm_gc.
# Words a version-1 reader ignores, so the layout version did not change.
H_OWNER_PID, H_OWNER_START, H_OWNER_NS = 10, 11, 12
# A node's cache (shm_members): the member table's offset and entries, and "closed".
H_MEMBERS, H_MEMBERS_CAP, H_CLOSED = 13, 14, 15
#: one member: pid, /proc start time, pid-namespace inode (u64 each)
MEMBER_BYTES = 24
# Slot fields, as indexes into one slot viewed as 4 x u64.
S_SEQ, S_OFF, S_LEN1, S_HASH = 0, 1, 2, 3

#: one slot as the lock-free readers unpack it: seq, offset, size + 1, hash
SLOT = struct.Struct("<4Q")
#: one u64 (a slot's sequence counter, read again after the copy)
U64 = struct.Struct("<Q")

MAX_FREE_EXTENTS = 1 << 16
DEFAULT_ARENA_SLACK = 0.25


def index_overhead_bytes(n_slots: int) -> int:
    """Bytes the segment spends on header, slot table and free table (not payload)."""
    return HEADER_BYTES + SLOT_BYTES * n_slots + EXTENT_BYTES * free_cap(n_slots)


def free_cap(n_slots: int) -> int:
    """Entries of the free-extent table for ``n_slots`` slots.

    Free extents never outnumber live entries + 1, so n_slots + 1 can never
    overflow; past the cap an overflow triggers compaction instead.
    """
    return max(1, min(n_slots + 1, MAX_FREE_EXTENTS))


def members_bytes(n_members: int) -> int:
    """Bytes of the member table of a cache shared by ``n_members`` local ranks."""
    return MEMBER_BYTES * n_members


def align(n: int, to: int = 64) -> int:
    """``n`` rounded up to a multiple of ``to`` (where the arena starts)."""
    return (n + to - 1) // to * to


def arena_base(n_slots: int, free_capacity: int) -> int:
    """The arena's offset in the segment: after header, slot table and free table."""
    return align(HEADER_BYTES + SLOT_BYTES * n_slots + EXTENT_BYTES * free_capacity)
