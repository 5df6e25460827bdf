"""Every rank's feedback of an epoch, applied to one table in one order.

Why a pure function: the loader under torch.distributed and the multi-node
simulator (:mod:`hotset.sim.nodes`) must build the same table from the same
per-rank feedback, and only the first has a process group. The loader gathers
the parts with a collective; the simulator holds them already.

The table is rewound to where the epoch began and every rank's feedback is
re-applied, rank 0's first, each ``update`` call scored by the system's own
scorer *on that call's batch alone* (SHADE's log-rank ranks within a batch).
The same inputs in the same order give the same table everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from hotset.importance.scorers import Scorer
    from hotset.importance.table import ImportanceTable

__all__ = ["Learner", "RankFeedback", "merge_rank_feedback"]


class Learner(Protocol):
    """What the merge uses of a system: its table and its scorer.

    A :class:`hotset.systems.base.System` is one. Declared here so that this
    module, below the systems, never imports them (not even for a type).
    """

    @property
    def table(self) -> ImportanceTable: ...

    @property
    def scorer(self) -> Scorer | None: ...


class RankFeedback(TypedDict):
    """One rank's epoch: the (ids, losses) of each ``update`` call, and its accuracy."""

    ids: list[npt.NDArray[np.int64]]
    losses: list[npt.NDArray[np.float64]]
    val: float | None


def merge_rank_feedback(
    system: Learner,
    parts: Sequence[RankFeedback],
    *,
    start_table: dict[str, Any],
    epoch: int,
) -> tuple[float, float | None]:
    """Rebuild ``system``'s table from every rank's part; the (train loss, val accuracy).

    The training loss is the mean over every rank's samples, the accuracy the mean
    of the ranks' that have one (each rank may have scored its own shard).
    """
    table = system.table
    table.load_state_dict(start_table)
    total, count = 0.0, 0
    for part in parts:
        for ids, losses in zip(part["ids"], part["losses"], strict=True):
            scores = None if system.scorer is None else system.scorer.score(ids, losses, table)
            table.update(ids, losses, epoch=epoch, scores=scores)
            total += float(losses.sum())
            count += len(losses)
    vals = [float(p["val"]) for p in parts if p["val"] is not None]
    loss = total / count if count else math.nan
    return loss, (sum(vals) / len(vals) if vals else None)
