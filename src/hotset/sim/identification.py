"""How well an epoch's importance estimates find the truly most important samples.

ImPACT's case for its hybrid evaluator (IEEE TC'25 §V-E, Fig. 15) is not only
time to accuracy: it is that re-evaluating the unstable set S identifies the
top 1% most important samples of an epoch more precisely than historical losses
alone. The simulator can measure that directly, since it holds the model: the
truth is a forward pass over every training sample at the moment the epoch is
drawn (the paper's *realtime* evaluation), the estimate is what the sampler drew
from (historical losses, with S refreshed for ``impact``).

This is measurement, not training: the forward pass runs in eval mode without
gradients and charges nothing to the modeled clock, so the run's decisions and
times are those of an unmeasured run.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

#: the share of samples called "most important" (the paper's top 1%)
TOP_SHARE = 0.01


def top_precision(
    estimate: npt.ArrayLike, truth: npt.ArrayLike, *, share: float = TOP_SHARE
) -> float:
    """The share of the ``share`` highest ``truth`` ids that ``estimate`` also ranks there.

    Ties break by id; an unknown estimate (NaN) ranks lowest.
    """
    est = np.asarray(estimate, dtype=np.float64)
    true = np.asarray(truth, dtype=np.float64)
    if est.shape != true.shape or est.ndim != 1 or not len(est):
        raise ValueError(f"estimate {est.shape} and truth {true.shape} must be equal 1-d shapes")
    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], got {share!r}")
    k = max(1, math.floor(share * len(est)))
    ids = np.arange(len(est))

    def top(values: npt.NDArray[np.float64]) -> set[int]:
        order = np.lexsort((ids, -np.nan_to_num(values, nan=-np.inf)))
        return set(order[:k].tolist())

    return len(top(est) & top(true)) / k
