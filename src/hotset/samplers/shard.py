"""Split one global epoch order across ranks, the way torch's DistributedSampler does.

Every rank computes the same global order (a pure function of seed and epoch)
and keeps a strided slice of it: rank ``r`` of ``w`` takes positions ``r, r + w,
r + 2w, ...``. So that every rank runs the same number of steps (a rank with
fewer batches would hang the others' collectives), the order is first padded by
wrapping around to its start until its length is a multiple of ``w`` -- a few
ids are then read twice per epoch -- or, with ``drop_last=True``, cut down to
the largest multiple of ``w`` -- a few ids are then skipped this epoch.
"""

from __future__ import annotations

import numpy as np

from hotset.errors import HotsetError
from hotset.samplers.base import IntArray


def check_topology(rank: int, world_size: int) -> None:
    """Reject a rank/world size pair that cannot describe a job."""
    if isinstance(world_size, bool) or not isinstance(world_size, int | np.integer):
        raise HotsetError(f"world_size must be an integer, got {world_size!r}")
    if world_size < 1:
        raise HotsetError(f"world_size must be at least 1, got {world_size}")
    if isinstance(rank, bool) or not isinstance(rank, int | np.integer):
        raise HotsetError(f"rank must be an integer, got {rank!r}")
    if not 0 <= rank < world_size:
        raise HotsetError(f"rank must be in 0..{world_size - 1}, got {rank}")


def shard_len(total: int, world_size: int, *, drop_last: bool = False) -> int:
    """How many ids each rank gets from an order of ``total`` ids."""
    if drop_last:
        return total // world_size
    return -(-total // world_size)


def shard(order: IntArray, rank: int, world_size: int, *, drop_last: bool = False) -> IntArray:
    """Rank ``rank``'s strided share of ``order`` (see the module doc for padding)."""
    check_topology(rank, world_size)
    ids = np.asarray(order, dtype=np.int64)
    if ids.ndim != 1:
        raise HotsetError(f"order must be 1-D, got shape {ids.shape}")
    if world_size == 1:
        return ids.copy()
    per_rank = shard_len(len(ids), world_size, drop_last=drop_last)
    total = per_rank * world_size
    if total <= len(ids):
        full = ids[:total]
    elif len(ids) == 0:
        full = ids
    else:  # wrap around, repeatedly if the order is shorter than the padding
        full = np.resize(ids, total)
    return full[rank:total:world_size].copy()
