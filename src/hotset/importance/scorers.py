"""Turn one step's per-sample losses into importance scores.

A scorer is pure: given the step's ids and losses and the table as it stands
*before* the step is recorded, it returns one score per entry of ``ids``, in
the same order. It never writes to the table; the caller passes the scores to
:meth:`ImportanceTable.update`, which files each under its own id.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from hotset.errors import HotsetError
from hotset.importance.loss import per_sample_cross_entropy
from hotset.importance.table import ImportanceTable

FloatArray = npt.NDArray[np.float64]

__all__ = [
    "BatchLossScorer",
    "LogRankScorer",
    "LossScorer",
    "PercentileScorer",
    "Scorer",
    "per_sample_cross_entropy",
]


@runtime_checkable
class Scorer(Protocol):
    """Scores for one step's samples, aligned with ``ids``."""

    name: str

    def score(self, ids: Any, losses: Any, table: ImportanceTable) -> FloatArray: ...


def _checked(ids: Any, losses: Any, table: ImportanceTable) -> FloatArray:
    _, loss_arr, _ = table.validate(ids, losses)
    return loss_arr


class LogRankScorer:
    """SHADE's rank-based importance (FAST'23 Eq. 6, as the authors' code computes it).

    Within the batch the losses are sorted ascending; the sample at rank ``j``
    (0 = lowest loss) scores ``ln(j + bias)`` with ``bias = 10``. Scores of
    different batches share one range, so a priority queue can compare them.
    Equal losses take consecutive ranks in batch order (a stable sort), where
    Eq. 6 read literally would give them the same rank.
    """

    name = "log_rank"

    def __init__(self, *, bias: float = 10.0) -> None:
        if not np.isfinite(bias) or bias <= 0:
            raise HotsetError(f"log-rank scorer: bias must be a positive number, got {bias!r}")
        self.bias = float(bias)

    def score(self, ids: Any, losses: Any, table: ImportanceTable) -> FloatArray:
        loss_arr = _checked(ids, losses, table)
        if loss_arr.size == 0:
            raise HotsetError("log-rank scorer: the batch is empty, there is nothing to rank")
        order = np.argsort(loss_arr, kind="stable")
        out = np.empty(len(loss_arr), dtype=np.float64)
        out[order] = np.log(np.arange(len(loss_arr), dtype=np.float64) + self.bias)
        return out


class PercentileScorer:
    """iCACHE / Selective-Backprop importance: ``percentile(loss) ** beta``.

    The percentile of a loss is the fraction of the reference window at or
    below it, in (0, 1]. The reference is the last ``window`` losses of the
    table's global window followed by this batch (the table keeps at most
    ``table.history`` of its own, so a larger ``window`` sees only that many).
    ``beta = 0.33`` keeps about three quarters of the samples when the score is
    used as a keep probability.
    """

    name = "percentile"

    def __init__(self, *, beta: float = 0.33, window: int = 1024) -> None:
        if not np.isfinite(beta) or beta <= 0:
            raise HotsetError(f"percentile scorer: beta must be a positive number, got {beta!r}")
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise HotsetError(f"percentile scorer: window must be an integer >= 1, got {window!r}")
        self.beta = float(beta)
        self.window = window

    def score(self, ids: Any, losses: Any, table: ImportanceTable) -> FloatArray:
        loss_arr = _checked(ids, losses, table)
        if loss_arr.size == 0:
            return np.zeros(0, dtype=np.float64)
        reference = np.concatenate([table.recent_losses(), loss_arr])[-self.window :]
        reference.sort()
        pct = np.searchsorted(reference, loss_arr, side="right") / len(reference)
        return np.power(pct, self.beta)


class LossScorer:
    """The raw per-sample loss (iCACHE's importance value)."""

    name = "loss"

    def score(self, ids: Any, losses: Any, table: ImportanceTable) -> FloatArray:
        return _checked(ids, losses, table).copy()


class BatchLossScorer:
    """Every sample of a batch gets the batch's mean loss (Eq. 5).

    This is the coarse-grained "default importance sampling" SHADE's §6.2
    ablations (the ``sh_*`` systems) use in place of loss decomposition.
    """

    name = "batch_loss"

    def score(self, ids: Any, losses: Any, table: ImportanceTable) -> FloatArray:
        loss_arr = _checked(ids, losses, table)
        if loss_arr.size == 0:
            return np.zeros(0, dtype=np.float64)
        return np.full(len(loss_arr), float(loss_arr.mean()), dtype=np.float64)
