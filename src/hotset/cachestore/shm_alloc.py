"""Where a slot's bytes go in the arena: first fit over a table of free extents.

The segment's free table lists the arena's free extents (offset, length),
sorted by offset. A put takes the first extent that fits (:func:`alloc`); a
delete hands its extent back and joins it with its neighbours (:func:`free`).
When no extent fits a put the budget allows (fragmentation), or the table is
full, the arena is compacted (:func:`compact`): live entries slide down, each
under its own seqlock so lock-free readers retry rather than read moving bytes,
leaving one free extent at the end. The budget check guarantees the tail then
fits.

Every function here runs with the write lock held
(:func:`hotset.cachestore.shm_liveness.write_lock`); none decides what is stored.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from hotset.cachestore.shm_layout import H_ARENA, H_N_FREE, S_LEN1, S_OFF, S_SEQ
from hotset.cachestore.shm_segment import Segment


def set_free(seg: Segment, extents: Sequence[tuple[int, int]]) -> None:
    """Replace the free table by ``extents`` (offset, length), dropping empty ones."""
    extents = [(o, n) for o, n in extents if n > 0]
    for i, (o, n) in enumerate(extents):
        seg.free_off[i] = o
        seg.free_len[i] = n
    seg.header[H_N_FREE] = len(extents)


def alloc(seg: Segment, size: int) -> int:
    """The offset of ``size`` arena bytes now taken; compacts once when none fit."""
    if size == 0:
        return 0
    for attempt in range(2):
        n_free = int(seg.header[H_N_FREE])
        fits = seg.free_len[:n_free] >= size
        i = int(fits.argmax()) if n_free else 0
        if n_free and fits[i]:
            off, length = int(seg.free_off[i]), int(seg.free_len[i])
            if length == size:
                seg.free_off[i : n_free - 1] = seg.free_off[i + 1 : n_free]
                seg.free_len[i : n_free - 1] = seg.free_len[i + 1 : n_free]
                seg.header[H_N_FREE] = n_free - 1
            else:
                seg.free_off[i] = off + size
                seg.free_len[i] = length - size
            return off
        if attempt == 0:
            compact(seg)
    raise RuntimeError(  # the budget check makes this unreachable
        f"shared-memory cache {seg.name!r}: no room for {size} bytes after compaction"
    )


def free(seg: Segment, off: int, size: int) -> None:
    """Give ``size`` bytes at ``off`` back, joined with adjacent free extents."""
    if size == 0:
        return
    n_free = int(seg.header[H_N_FREE])
    free_off, free_len = seg.free_off, seg.free_len
    p = int(np.searchsorted(free_off[:n_free], off))
    joins_prev = p > 0 and int(free_off[p - 1]) + int(free_len[p - 1]) == off
    joins_next = p < n_free and off + size == int(free_off[p])
    if joins_prev and joins_next:
        free_len[p - 1] += np.uint64(size) + free_len[p]
        free_off[p : n_free - 1] = free_off[p + 1 : n_free]
        free_len[p : n_free - 1] = free_len[p + 1 : n_free]
        seg.header[H_N_FREE] = n_free - 1
    elif joins_prev:
        free_len[p - 1] += np.uint64(size)
    elif joins_next:
        free_off[p] = off
        free_len[p] += np.uint64(size)
    elif n_free == len(free_off):
        compact(seg)  # the table is full: one extent afterwards
    else:
        free_off[p + 1 : n_free + 1] = free_off[p:n_free]
        free_len[p + 1 : n_free + 1] = free_len[p:n_free]
        free_off[p] = off
        free_len[p] = size
        seg.header[H_N_FREE] = n_free + 1


def compact(seg: Segment) -> None:
    """Slide live entries to the front, each under its seqlock; one free extent remains."""
    slots, arena = seg.slots, seg.arena
    live = np.flatnonzero(slots[:, S_LEN1] > 1)
    order = live[np.argsort(slots[live, S_OFF], kind="stable")]
    pos = 0
    for sid in order.tolist():
        off, size = int(slots[sid, S_OFF]), int(slots[sid, S_LEN1]) - 1
        if off != pos:
            seq = int(slots[sid, S_SEQ])
            slots[sid, S_SEQ] = seq + 1
            arena[pos : pos + size] = arena[off : off + size]  # overlap-safe
            slots[sid, S_OFF] = pos
            slots[sid, S_SEQ] = seq + 2
        pos += size
    set_free(seg, [(pos, int(seg.header[H_ARENA]) - pos)])


def free_gaps(seg: Segment, starts: npt.NDArray[np.int64], ends: npt.NDArray[np.int64]) -> None:
    """Rebuild the free table as the gaps between live extents (sorted ``starts``/``ends``).

    After a writer died mid-write the table cannot be trusted; the slots can
    (once torn ones are dropped). More gaps than the table holds: compact.
    """
    arena_size = int(seg.header[H_ARENA])
    gap_starts = np.concatenate(([0], ends))
    gap_ends = np.concatenate((starts, [arena_size]))
    keep = gap_ends > gap_starts
    extents = list(
        zip(gap_starts[keep].tolist(), (gap_ends - gap_starts)[keep].tolist(), strict=True)
    )
    if len(extents) > len(seg.free_off):
        compact(seg)
    else:
        set_free(seg, extents)
