"""Per-sample importance: the table keyed by sample id, scorers, cross-rank aggregation.

Nothing here imports torch at import time: the loss decomposition and the
cross-rank gather import it when called.
"""

from hotset.importance.aggregate import all_gather_arrays
from hotset.importance.scorers import (
    BatchLossScorer,
    LogRankScorer,
    LossScorer,
    PercentileScorer,
    Scorer,
    per_sample_cross_entropy,
)
from hotset.importance.table import DEFAULT_SCORE, ImportanceSnapshot, ImportanceTable

__all__ = [
    "DEFAULT_SCORE",
    "BatchLossScorer",
    "ImportanceSnapshot",
    "ImportanceTable",
    "LogRankScorer",
    "LossScorer",
    "PercentileScorer",
    "Scorer",
    "all_gather_arrays",
    "per_sample_cross_entropy",
]
