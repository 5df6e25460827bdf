"""Importance shared across data-parallel ranks, once per epoch, over torch.distributed.

Why: SHADE's promise is one global draw computed on every rank without a
coordinator, which needs every rank to hold the same importance table, training
loss and validation accuracy when an epoch begins. Each rank only trains (and
scores) its own shard, so left alone the tables diverge from the first epoch.

How: at the end of an epoch every rank gathers every rank's feedback of the
epoch -- the (ids, losses) of each ``update`` call, in arrival order -- with one
``all_gather_object``. Then each rank rewinds its table to where the epoch began
and re-applies all of it, rank 0's first, each call scored by the system's own
scorer *on that call's batch alone* (SHADE's log-rank ranks within a batch, so a
rank's batch is scored as that rank scored it). The same inputs in the same
order give the same table on every rank. The epoch's training loss is the mean
over every rank's samples, and the validation accuracy the mean of the ranks'
(each rank may have scored its own shard). The policy, which is each rank's own
cache, keeps what it observed locally.

One collective per epoch, of ``n / W`` ids and losses per rank, at the moment
every rank closes the epoch (``iter`` of the next one): the loop's own lockstep.

Re-evaluated losses (ImPACT's set S, partitioned across the ranks) are shared
before the draw by :func:`gather_evaluated`: each rank re-scores only its part
of S, and every rank needs all of them before it draws the one global order.
Plain tensor collectives (sizes, then padded ids and losses), nothing pickled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.engine.arrays import IntArray
from hotset.engine.feedback import Feedback
from hotset.importance.merge import RankFeedback, merge_rank_feedback
from hotset.systems.base import System

__all__ = ["active_world", "gather_evaluated", "merge_epoch"]


def active_world(world_size: int) -> bool:
    """Whether an initialised process group of ``world_size`` ranks is there to share with."""
    import torch.distributed as dist

    return (
        world_size > 1
        and dist.is_available()
        and dist.is_initialized()
        and dist.get_world_size() == world_size
    )


def merge_epoch(
    system: System,
    log: Sequence[Feedback],
    *,
    start_table: dict[str, Any],
    epoch: int,
    val_accuracy: float | None,
) -> tuple[float, float | None]:
    """Rebuild the table from every rank's feedback; the global (train loss, val accuracy)."""
    import torch.distributed as dist

    mine: RankFeedback = {
        "ids": [np.asarray(fb.ids, dtype=np.int64) for fb in log],
        "losses": [np.asarray(fb.losses, dtype=np.float64) for fb in log],
        "val": val_accuracy,
    }
    parts: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(parts, mine)
    return merge_rank_feedback(system, parts, start_table=start_table, epoch=epoch)


def gather_evaluated(
    ids: IntArray, losses: npt.NDArray[np.float64]
) -> list[tuple[IntArray, npt.NDArray[np.float64]]]:
    """Every rank's re-evaluated (ids, losses), rank 0's first (a collective: every rank calls).

    Tensors on the device the backend wants (NCCL: this process's GPU), padded to
    the longest part; two ``all_gather`` calls after one for the sizes.
    """
    import torch
    import torch.distributed as dist

    world = dist.get_world_size()
    device = torch.device("cpu")
    if dist.get_backend() == "nccl":
        device = torch.device("cuda", torch.cuda.current_device())
    count = torch.tensor([len(ids)], dtype=torch.int64, device=device)
    counts = [torch.zeros_like(count) for _ in range(world)]
    dist.all_gather(counts, count)
    sizes = [int(c.item()) for c in counts]
    longest = max(sizes)
    out: list[tuple[IntArray, npt.NDArray[np.float64]]] = []
    gathered = []
    for values, dtype in ((ids, torch.int64), (losses, torch.float64)):
        mine = torch.zeros(longest, dtype=dtype, device=device)
        mine[: len(values)] = torch.as_tensor(np.asarray(values), dtype=dtype, device=device)
        parts = [torch.zeros_like(mine) for _ in range(world)]
        dist.all_gather(parts, mine)
        gathered.append([t.cpu().numpy() for t in parts])
    for r, size in enumerate(sizes):
        out.append(
            (
                np.asarray(gathered[0][r][:size], dtype=np.int64),
                np.asarray(gathered[1][r][:size], dtype=np.float64),
            )
        )
    return out
