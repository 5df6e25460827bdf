"""Which rank (or node) owns a sample id: one fixed hash, for every distributed part.

Why one function: a pooled cache places each entry on one node (Redis Cluster's
hash slots do it for real; the multi-node simulator models it), and Quiver shards
misses across jobs. An owner must not depend on the order ids arrive in or on
the seed of a run, so that ranks, restarts and simulations all compute the same
map without talking. (Brand §3.4 owns abstract chunks, not ids, round-robin, so
that each node owns exactly what its memory holds: see
:mod:`hotset.policies.brand.ranks`.)
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hotset.errors import HotsetError

IntArray = npt.NDArray[np.int64]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def owner_ranks(ids: npt.ArrayLike, world_size: int) -> IntArray:
    """The owner of each id among ``world_size`` ranks: a multiplicative hash, mod the size."""
    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise HotsetError(f"owners: world_size must be a positive integer, got {world_size!r}")
    arr = np.asarray(ids)
    if arr.size and (arr.dtype.kind not in "iu" or int(arr.min()) < 0):
        raise HotsetError("owners: ids must be non-negative integers")
    x = arr.astype(np.uint64) * _GOLDEN
    x ^= x >> np.uint64(31)
    return (x % np.uint64(world_size)).astype(np.int64)
