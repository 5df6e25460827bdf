"""Loss-proportional selection: keep each id with probability proportional to its loss.

Why: ImPACT (IEEE TC'25 §III-B) selects with "a recent loss-based importance
sampling algorithm", its reference [22] (RHO-loss, Mindermann et al., ICML 2022),
among the loss-based samplers it builds on ([12], [14], [21]). RHO-loss ranks by
the *reducible* loss -- training loss minus the loss of a model trained on
holdout data -- which needs losses hotset cannot compute itself (it owns neither
the model nor a holdout split): ``impact[sampler=rho]`` when the user gives them
(:mod:`hotset.samplers.rho`). Without them, what it can do is the loss-proportional
importance sampling of the paper's references ([12], [13]: a sample's chance grows
with its loss), as a subset an I/O-oriented sampler reads: ``impact[sampler=loss]``. The default,
``sampler=percentile``, is iCACHE's rule (Selective-Backprop, reference [14]).

The rule, a pure function of the losses and the coins:

* ``k = share * m`` ids are kept in expectation, ``m`` the ids with a known loss
  (``share = 1 / (1 + beta)``: what the percentile rule keeps past its window,
  so ``beta`` sets the read budget of both rules alike);
* id ``i`` is kept when ``coin_i < p_i``, ``p_i = min(1, c * loss_i)``, ``c``
  chosen so that the ``p_i`` add up to ``k`` (the largest losses are capped at 1
  and the rest share what is left: "water filling");
* an id with no loss yet (NaN) is always kept, as in the percentile rule: there
  is nothing to weigh it by, and skipping it would starve it. A loss of 0 is never
  kept by the rule itself; ImPACT's coverage guard (``coverage_epochs``) keeps it
  once it is due.

No loss weights: like the percentile rule (and [14], [22]) the kept samples train
unweighted, so the two samplers differ only in which ids they keep.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

__all__ = ["keep_probabilities", "loss_keep_mask"]


def keep_probabilities(losses: FloatArray, k: float) -> FloatArray:
    """``min(1, c * loss)`` per id, ``c`` such that the probabilities add up to ``k``.

    ``losses`` are finite and ``>= 0``. Where every loss left is 0 the remaining
    mass is spread evenly (nothing tells them apart).
    """
    m = len(losses)
    p = np.zeros(m, dtype=np.float64)
    if m == 0 or k <= 0:
        return p
    if k >= m:
        return np.ones(m, dtype=np.float64)
    capped = np.zeros(m, dtype=bool)
    while True:
        left = k - capped.sum()
        free = ~capped
        mass = float(losses[free].sum())
        if mass <= 0.0:  # only zero losses left: share the rest evenly
            p[free] = left / free.sum()
            break
        p[free] = losses[free] * (left / mass)
        over = free & (p >= 1.0)
        if not over.any():
            break
        capped |= over
        p[capped] = 1.0
    return np.minimum(p, 1.0)


def loss_keep_mask(values: FloatArray, coins: FloatArray, share: float) -> npt.NDArray[np.bool_]:
    """Which ids to keep, ``values[j]`` the loss of the ``j``-th id (module docstring)."""
    keep = np.ones(len(values), dtype=bool)
    known = ~np.isnan(values)
    m = int(known.sum())
    if m:
        p = keep_probabilities(values[known], share * m)
        keep[known] = coins[known] < p
    return keep
