"""Share one step's (id, loss) pairs across data-parallel ranks, as parallel arrays.

Every rank applies the same updates in the same order -- rank 0's pairs, then
rank 1's, and so on -- so every rank's :class:`ImportanceTable` goes through the
same versions and holds the same snapshot. That is what lets a sampler such as
PADS compute one global draw on every rank without a coordinator.

Ranks may contribute different numbers of pairs (a short last batch, a rank
that dropped a sample): lengths are gathered first, every rank pads to the
longest, and the padding is cut off again using the gathered counts.

torch is imported lazily; without an initialised process group the inputs come
back unchanged (a world of one).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hotset.errors import HotsetError
from hotset.importance.table import _to_numpy


def all_gather_arrays(*arrays: Any, group: Any = None) -> tuple[np.ndarray, ...]:
    """Concatenate equal-length 1-D arrays from every rank, rank-major, on every rank.

    Integer arrays travel as int64, everything else as float64.
    """
    if not arrays:
        raise HotsetError("all_gather_arrays: give at least one array")
    local = []
    for i, values in enumerate(arrays):
        arr = _to_numpy(values)
        if arr.ndim != 1:
            raise HotsetError(f"all_gather_arrays: array {i} must be 1-D, got shape {arr.shape}")
        integral = arr.dtype != np.bool_ and np.issubdtype(arr.dtype, np.integer)
        local.append(arr.astype(np.int64 if integral else np.float64, copy=False))
    length = len(local[0])
    for i, arr in enumerate(local[1:], start=1):
        if len(arr) != length:
            raise HotsetError(
                f"all_gather_arrays: array {i} has {len(arr)} values, array 0 has {length}"
            )

    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()):
        return tuple(arr.copy() for arr in local)
    world = dist.get_world_size(group)
    device = torch.device("cpu")
    if "nccl" in str(dist.get_backend(group)).lower():
        device = torch.device("cuda", torch.cuda.current_device())

    count = torch.tensor([length], dtype=torch.int64, device=device)
    counts = [torch.zeros_like(count) for _ in range(world)]
    dist.all_gather(counts, count, group=group)
    sizes = [int(c.item()) for c in counts]
    longest = max(sizes)

    out = []
    for arr in local:
        padded = np.zeros(longest, dtype=arr.dtype)
        padded[:length] = arr
        mine = torch.from_numpy(padded).to(device)
        parts = [torch.empty_like(mine) for _ in range(world)]
        dist.all_gather(parts, mine, group=group)
        out.append(
            np.concatenate(
                [part.cpu().numpy()[:size] for part, size in zip(parts, sizes, strict=True)]
            )
        )
    return tuple(out)
