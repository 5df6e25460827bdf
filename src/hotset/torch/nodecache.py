"""The local ranks of a job meet on one embedded cache per node (torch.distributed side).

Under a process group, the loader's embedded shared-memory cache is one per
node, not one per rank (``cache_scope="node"``, the default): the ranks on a
machine share one segment and one budget, each rank's policy planning
``1 / local ranks`` of it, and each rank looks in the segment for its planned
misses before it reads storage (what the other ranks put there). How the ranks
agree, who creates the segment, what a rank's death does and who unlinks it:
:mod:`hotset.cachestore.shm_node` and :mod:`hotset.cachestore.shm_members`.

Building a loader is then a collective (one ``all_gather_object`` of a few
numbers per rank), as DDP's constructor is: every rank builds its loaders in the
same order. Without a process group (``rank=``/``world_size=`` given by hand)
there is nobody to meet, and each rank keeps a cache of its own with the whole
budget, as ``cache_scope="rank"`` asks.
"""

from __future__ import annotations

from typing import Any

from hotset.cachestore.shm_node import NodeShare, proposal
from hotset.errors import HotsetError
from hotset.torch.ranks import active_world

__all__ = ["CACHE_SCOPES", "check_cache_scope", "node_share"]

#: where the embedded cache lives under several ranks
CACHE_SCOPES = ("node", "rank")


def check_cache_scope(value: object) -> str:
    """``value`` if it names a scope, else a HotsetError naming it."""
    if not isinstance(value, str) or value not in CACHE_SCOPES:
        raise HotsetError(
            f"cache_scope must be 'node' (the local ranks share one embedded cache and its "
            f"budget) or 'rank' (a cache of the whole budget per rank), got {value!r:.80}"
        )
    return value


def node_share(scope: str, world_size: int) -> NodeShare | None:
    """The local ranks this rank shares its node's cache with; None: a cache of its own.

    A collective over the default process group when it returns a share (every
    rank of the group calls it, see the module docstring).
    """
    if scope != "node" or not active_world(world_size):
        return None
    import torch.distributed as dist

    parts: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(parts, proposal())
    return NodeShare.agree(parts, dist.get_rank())
