"""The slot table: one slot per sample id, read without locks, written under a seqlock.

A slot holds (seq, offset, size + 1, hash) of one sample's bytes in the arena;
size + 1 is 0 for an empty slot. Readers take no lock: a writer makes the
slot's sequence counter odd before touching the slot or its bytes and even
afterwards, and a reader copies the bytes and retries if the counter moved (a
seqlock). With ``verify`` every get also re-hashes the bytes and raises
:class:`~hotset.errors.IntegrityError` on a mismatch.

Reads, cost. :func:`read_many` makes one pass over the batch: each key is
validated once, its hash compared as an integer with the one in its slot
(hashing the bytes only with ``verify``), and a hit is one copy, from the
segment straight into the ``bytes`` returned, between the two reads of the
counter. A miss (empty slot, other content, or an extent reaching past the
arena, which no writer makes) is answered on the first look: serving nothing is
always safe, so it needs no second read of the counter. Only a slot a writer
holds takes the retrying path (:func:`read`). For samples of ~100 kB nearly all
the time of a hit is then the first touch of the freshly allocated result (page
faults where the allocator has handed a freed batch back to the kernel), not
this bookkeeping.

Writes (:func:`write_slot`, :func:`drop_slot`, :func:`clear_slots`,
:func:`recover`) run under the write lock
(:func:`hotset.cachestore.shm_liveness.write_lock`) and take arena bytes from
:mod:`hotset.cachestore.shm_alloc`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import xxhash

from hotset.cachestore import shm_alloc
from hotset.cachestore.base import CacheKey, check_cache_key
from hotset.cachestore.shm_layout import (
    H_ARENA,
    H_LIVE,
    H_USED,
    S_HASH,
    S_LEN1,
    S_OFF,
    S_SEQ,
    SLOT,
    SLOT_BYTES,
    U64,
)
from hotset.cachestore.shm_liveness import writer_alive
from hotset.cachestore.shm_segment import Segment
from hotset.errors import HotsetError, IntegrityError

_READ_GIVE_UP_SECONDS = 0.5


def out_of_range(seg: Segment, sample_id: int) -> HotsetError:
    """The error for a sample id the segment has no slot for."""
    return HotsetError(f"sample id {sample_id} out of range for a cache of {seg.n_slots} slots")


def slot_id(seg: Segment, key: CacheKey) -> int:
    """The slot of ``key`` (its sample id), or raise when the segment has none for it."""
    if key.sample_id >= seg.n_slots:
        raise out_of_range(seg, key.sample_id)
    return key.sample_id


# -- reads (lock-free) ------------------------------------------------------------


def read(seg: Segment, sid: int, want: int, *, copy: bool) -> bytes | bool | None:
    """One consistent look at a slot: bytes (copy) / presence (not copy) / None.

    The general path, spinning while a writer holds the slot. :func:`read_many`
    inlines the first, uncontended attempt and comes here only to retry.
    """
    buf = seg.buf
    base = seg.slot_base + SLOT_BYTES * sid
    arena_base = seg.arena_base
    arena_size = int(seg.header[H_ARENA])
    deadline = 0.0
    spins = 0
    while True:
        seq, off, len1, digest = SLOT.unpack_from(buf, base)
        if not seq & 1:
            if len1 == 0 or digest != want or off + len1 - 1 > arena_size:
                # Absent, other content, or an extent no writer makes: a miss
                # is always safe to answer, so it needs no second look.
                return None if copy else False
            start = arena_base + off
            result = bytes(buf[start : start + len1 - 1]) if copy else True
            if U64.unpack_from(buf, base)[0] == seq:
                return result
        # A writer is on this slot: retry; give up (a miss, never wrong bytes)
        # if the writer died holding it or takes implausibly long.
        spins += 1
        if spins < 64:
            continue
        if deadline == 0.0:
            deadline = time.monotonic() + _READ_GIVE_UP_SECONDS
        if not writer_alive(seg) or time.monotonic() > deadline:
            return None if copy else False
        time.sleep(0)


def _read_retry(seg: Segment, sid: int, want: int) -> bytes | None:
    data = read(seg, sid, want, copy=True)
    assert not isinstance(data, bool)
    return data


def read_many(
    seg: Segment, keys: Sequence[CacheKey], *, verify: bool
) -> tuple[list[bytes | None], int, int]:
    """The bytes of each key (None for a miss), with the number of hits and bytes served.

    The hot path: one pass over the keys, everything per batch hoisted into
    locals, and per hit exactly one copy (shared buffer -> the returned bytes)
    between two reads of the slot's sequence counter. Only a slot a writer is on
    (odd or moved counter) goes to :func:`read`, which retries and gives up.
    """
    buf = seg.buf
    slot_base = seg.slot_base
    arena_base = seg.arena_base
    arena_size = int(seg.header[H_ARENA])
    n_slots = seg.n_slots
    unpack_slot = SLOT.unpack_from
    unpack_seq = U64.unpack_from
    out: list[bytes | None] = []
    append = out.append
    hits = served = 0
    for raw in keys:
        key = check_cache_key(raw)
        sid = key.sample_id
        if sid >= n_slots:
            raise out_of_range(seg, sid)
        want = int(key.content_hash, 16)
        base = slot_base + SLOT_BYTES * sid
        seq, off, len1, digest = unpack_slot(buf, base)
        data: bytes | None
        if seq & 1:
            data = _read_retry(seg, sid, want)
        elif len1 == 0 or digest != want or off + len1 - 1 > arena_size:
            # A miss (absent, other content, or an extent no writer makes):
            # serving nothing is always safe, so no second look at the counter.
            append(None)
            continue
        else:
            start = arena_base + off
            data = bytes(buf[start : start + len1 - 1])
            if unpack_seq(buf, base)[0] != seq:
                data = _read_retry(seg, sid, want)
        if data is None:
            append(None)
            continue
        if verify and xxhash.xxh3_64_intdigest(data) != want:
            raise IntegrityError(
                f"shared-memory cache {seg.name!r}: sample {sid} should hash "
                f"to {key.content_hash} but its {len(data)} cached bytes hash to "
                f"{xxhash.xxh3_64_hexdigest(data)}"
            )
        hits += 1
        served += len(data)
        append(data)
    return out, hits, served


# -- writes (the caller holds the write lock) -------------------------------------


def drop_slot(seg: Segment, sid: int) -> bool:
    """Empty a slot (under its seqlock) and free its bytes; False if it was empty."""
    slots, header = seg.slots, seg.header
    len1 = int(slots[sid, S_LEN1])
    if not len1:
        return False
    seq = int(slots[sid, S_SEQ])
    slots[sid, S_SEQ] = seq + 1
    slots[sid, S_LEN1] = 0
    slots[sid, S_SEQ] = seq + 2
    header[H_USED] -= np.uint64(len1 - 1)
    header[H_LIVE] -= np.uint64(1)
    shm_alloc.free(seg, int(slots[sid, S_OFF]), len1 - 1)
    return True


def write_slot(seg: Segment, sid: int, want: int, payload: bytes) -> None:
    """Fill an empty slot: odd counter, allocate, copy, fields, even counter."""
    slots, header = seg.slots, seg.header
    seq = int(slots[sid, S_SEQ])
    slots[sid, S_SEQ] = seq + 1  # odd: readers of this slot retry
    size = len(payload)
    off = shm_alloc.alloc(seg, size)
    if size:
        start = seg.arena_base + off
        seg.buf[start : start + size] = payload
    slots[sid, S_OFF] = off
    slots[sid, S_HASH] = want
    slots[sid, S_LEN1] = size + 1
    slots[sid, S_SEQ] = seq + 2
    header[H_USED] += np.uint64(size)
    header[H_LIVE] += np.uint64(1)


def _empty_all(seg: Segment) -> None:
    """Every slot empty, each counter moved through odd so readers retry."""
    slots = seg.slots
    slots[:, S_SEQ] += np.uint64(1)
    slots[:, S_LEN1] = 0
    slots[:, S_SEQ] += np.uint64(1)


def clear_slots(seg: Segment) -> None:
    """Empty every slot and free the whole arena."""
    header = seg.header
    _empty_all(seg)
    shm_alloc.set_free(seg, [(0, int(header[H_ARENA]))])
    header[H_USED] = 0
    header[H_LIVE] = 0


def recover(seg: Segment) -> None:
    """Repair after a writer died mid-write: drop torn slots, rebuild the free table."""
    slots, header = seg.slots, seg.header
    torn = (slots[:, S_SEQ] & np.uint64(1)) == 1
    if torn.any():
        slots[torn, S_LEN1] = 0
        slots[torn, S_SEQ] += np.uint64(1)
    live = np.flatnonzero(slots[:, S_LEN1] > 0)
    sizes = slots[live, S_LEN1].astype(np.int64) - 1
    offs = slots[live, S_OFF].astype(np.int64)
    arena_size = int(header[H_ARENA])
    order = np.argsort(offs, kind="stable")
    offs, sizes = offs[order], sizes[order]
    nonempty = sizes > 0
    starts, ends = offs[nonempty], offs[nonempty] + sizes[nonempty]
    if (ends > arena_size).any() or (starts[1:] < ends[:-1]).any():
        # Overlapping or out-of-arena entries: trust nothing, start empty.
        _empty_all(seg)
        sizes = sizes[:0]
        live = live[:0]
        starts = ends = starts[:0]
    header[H_USED] = int(sizes.sum())
    header[H_LIVE] = len(live)
    shm_alloc.free_gaps(seg, starts, ends)
