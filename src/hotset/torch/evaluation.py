"""``hotset.eval_loader``: a plain DataLoader for validation, the way users expect one.

Validation wants the opposite of training: every sample once, in order, no
importance, no cache (a validation pass reads each sample once per epoch, so a
cache would only take memory from training) and, under DDP, either the whole
set on every rank or an explicit shard. A hotset training loader with
``system="pytorch"`` still shuffles, yields ids and weights and is sharded by
rank -- so each rank scored half the set and SHADE's mode switch got that.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hotset.errors import HotsetError
from hotset.torch.dataset import HotsetDataset
from hotset.torch.user import is_map_style

__all__ = ["eval_loader"]


def eval_loader(
    data: Any,
    *,
    batch_size: int = 256,
    num_workers: int = 0,
    shard: bool = False,
    rank: int | None = None,
    world_size: int | None = None,
    collate_fn: Callable[[list[Any]], Any] | None = None,
    pin_memory: bool = False,
) -> Any:
    """A ``torch.utils.data.DataLoader`` over ``data`` in index order, uncached.

    ``data`` is a :class:`HotsetDataset`, a location (opened with
    ``decode="image"``) or the user's own map-style Dataset (used as it is).
    Batches are ``(x, y)`` as a DataLoader gives them. Every rank sees the whole
    set unless ``shard=True``: then torch's ``DistributedSampler`` (no shuffle)
    gives each rank ``ceil(n / world_size)`` samples, padding the last ranks
    with repeats, as it always does -- averaged metrics are then very slightly
    off; gather per-sample results instead when that matters.
    """
    from torch.utils.data import DataLoader, DistributedSampler

    from hotset.torch.dataset import open_dataset

    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise HotsetError(f"batch_size must be an integer >= 1, got {batch_size!r}")
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
        raise HotsetError(f"num_workers must be an integer >= 0, got {num_workers!r}")
    if not isinstance(shard, bool):
        raise HotsetError(f"shard must be True or False, got {shard!r}")
    if isinstance(data, str) or hasattr(data, "__fspath__"):
        data = open_dataset(data)
    elif not isinstance(data, HotsetDataset) and not is_map_style(data):
        raise HotsetError(f"eval_loader needs a map-style dataset, got {data!r:.80}")
    sampler: Any = None
    if shard:
        if rank is None or world_size is None:
            import torch.distributed as dist

            if not (dist.is_available() and dist.is_initialized()):
                raise HotsetError(
                    "shard=True needs rank= and world_size=, or an initialised process group"
                )
            rank, world_size = dist.get_rank(), dist.get_world_size()
        sampler = DistributedSampler(data, num_replicas=world_size, rank=rank, shuffle=False)
    return DataLoader(
        data,
        batch_size=batch_size,
        shuffle=False,
        sampler=sampler,
        num_workers=num_workers,
        collate_fn=collate_fn,
        pin_memory=pin_memory,
    )
