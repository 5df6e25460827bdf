"""iCACHE's multi-job importance (HPCA'23 §III-D): one cache, several jobs' importance.

Why: jobs training different models on one data set rate the same sample
differently (a model fits it sooner, or a faster job is epochs ahead and its
losses are smaller), and a shared cache can key its heap by one number only.
The paper makes that number comparable and weighted by who gains from the cache:

* **Relative importance** (:func:`relative_importance`): each job's raw
  importance of item ``i`` becomes its percentile position in that job's whole
  training set, ``RIV_i`` in ``[0, 1]``, so a job with small losses counts as
  much as one with large ones.
* **Cache eligibility** (:func:`eligible`): a job whose caching benefit
  ``Ratio_benefit = T_cacheless / T_cache`` (mini-batch time without the cache
  over with it) is *higher than* the threshold (1.5 in the paper) is
  cache-eligible; the others' importance is ignored.
* **Adjusted importance** (:func:`adjusted_importance`):
  ``AIV_i = sum over eligible jobs j of Ratio_benefit^j * RIV_i^j``: the job the
  cache speeds up most weighs most.

Choices the paper leaves open, made here and tested:

* Ties share one percentile, the *mid-rank*: ``(below + (equal - 1) / 2) / (n - 1)``
  for ``n`` known values (``0.5`` when a job knows a single value), so the
  result depends on the values only, never on the ids or their order.
* An item a job has no importance for yet (NaN) has no percentile in that job
  (NaN) and adds nothing to the sum; the percentiles are over the items the
  job knows. An item no eligible job knows stays NaN (unknown), which the cache
  treats as it treats an unknown loss.
* **A job's weight is capped** at :data:`MAX_BENEFIT`: ``benefit`` in the sum is
  ``min(benefit, MAX_BENEFIT)``, so no one job (a forged one, say: jobs publish on a
  shared server) outweighs the others by more than that, and the sum never overflows.
* **No eligible job**: no AIV (``None``). Then the cache is worth nothing much to
  anyone, the paper gives no rule, and the caller keeps its single-job keys
  (:class:`hotset.policies.icache.ICache` keys by its own job's importance).

Everything here is pure and deterministic: the benefits are measured by the
driver (:func:`hotset.policies.quiver.placement.probe_result`, the mini-batch
probe Quiver's placement uses) and the snapshots are inputs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hotset.errors import HotsetError

FloatArray = npt.NDArray[np.float64]

#: the paper's cache-eligibility threshold on ``Ratio_benefit`` (§III-D)
ELIGIBLE_ABOVE = 1.5
#: the paper's benefit probe: 20 mini-batches without the cache, then 20 with it
BENEFIT_PROBE = 20
#: the largest benefit a job's importance is weighed by: a job 1,000x faster from the
#: cache is beyond anything measured (Fig. 14's jobs: 1.6x and 2.4x), so a job that
#: claims more weighs no more than that, and a sum of them stays finite
MAX_BENEFIT = 1000.0
#: the most jobs' snapshots a cache is keyed by (each is a float per item): a shared
#: namespace's jobs, read at most this many at a time, and kept as their one AIV
MAX_JOBS = 16


def check_threshold(value: object) -> float:
    """``value`` as an eligibility threshold: a finite number >= 1 (a job is never
    sped up by less than nothing), else a :class:`HotsetError` naming it."""
    bad = isinstance(value, bool) or not isinstance(value, int | float)
    if bad or not math.isfinite(value) or value < 1.0:  # type: ignore[arg-type,operator]
        raise HotsetError(
            f"multi-job: the eligibility threshold must be a finite number >= 1 "
            f"(the paper's: {ELIGIBLE_ABOVE}), got {value!r}"
        )
    return float(value)  # type: ignore[arg-type]


def check_benefit(job: str, value: object) -> float:
    """``value`` as job ``job``'s ``Ratio_benefit``: a finite number > 0."""
    bad = isinstance(value, bool) or not isinstance(value, int | float)
    if bad or not math.isfinite(value) or not value > 0:  # type: ignore[arg-type,operator]
        raise HotsetError(
            f"multi-job: job {job!r}'s benefit (T_cacheless / T_cache) must be a finite "
            f"number > 0, got {value!r}"
        )
    return float(value)  # type: ignore[arg-type]


def relative_importance(scores: npt.ArrayLike) -> FloatArray:
    """Each item's percentile position among the items the job knows, in ``[0, 1]``.

    Mid-rank for ties (equal values, equal result); NaN in, NaN out. The least
    known value maps to 0 and the greatest to 1 when they differ.
    """
    values = np.asarray(scores, dtype=np.float64)
    if values.ndim != 1:
        raise HotsetError(f"relative_importance: scores must be 1-D, got shape {values.shape}")
    if np.isinf(values).any():
        raise HotsetError("relative_importance: scores must be finite or NaN (unknown)")
    out = np.full(len(values), np.nan, dtype=np.float64)
    known = ~np.isnan(values)
    kv = values[known]
    n = len(kv)
    if n == 0:
        return out
    if n == 1:
        out[known] = 0.5
        return out
    ordered = np.sort(kv)
    below = np.searchsorted(ordered, kv, side="left")
    equal = np.searchsorted(ordered, kv, side="right") - below
    out[known] = (below + (equal - 1) / 2.0) / (n - 1)
    return out


@dataclass(frozen=True)
class JobImportance:
    """What one job publishes for the cache: its benefit and its relative importance."""

    job: str
    benefit: float
    riv: FloatArray

    def __post_init__(self) -> None:
        object.__setattr__(self, "benefit", check_benefit(self.job, self.benefit))
        riv = np.asarray(self.riv, dtype=np.float64)
        if riv.ndim != 1:
            raise HotsetError(f"multi-job: job {self.job!r}'s RIV must be 1-D, got {riv.shape}")
        known = riv[~np.isnan(riv)]
        if len(known) and (known.min() < 0.0 or known.max() > 1.0):
            raise HotsetError(
                f"multi-job: job {self.job!r}'s RIV must lie in [0, 1] (NaN: unknown), "
                f"got values from {known.min()!r} to {known.max()!r}"
            )
        object.__setattr__(self, "riv", riv)

    @classmethod
    def from_scores(cls, job: str, benefit: float, scores: npt.ArrayLike) -> JobImportance:
        """A job's snapshot from its raw importance (its per-sample losses)."""
        return cls(job, benefit, relative_importance(scores))


def eligible(benefit: float, threshold: float = ELIGIBLE_ABOVE, *, job: str = "?") -> bool:
    """Whether a job with this ``Ratio_benefit`` is cache-eligible: *higher than* the
    threshold (a job exactly at it is not)."""
    return check_benefit(job, benefit) > check_threshold(threshold)


def adjusted_importance(
    jobs: Sequence[JobImportance], *, threshold: float = ELIGIBLE_ABOVE
) -> FloatArray | None:
    """``AIV_i = sum of benefit^j * RIV_i^j`` over the cache-eligible jobs ``j`` (each
    benefit capped at :data:`MAX_BENEFIT`).

    None when no job is eligible (see the module docstring). NaN where no
    eligible job knows the item. Every job's RIV must cover the same items.
    """
    limit = check_threshold(threshold)
    if not jobs:
        return None
    sizes = {len(j.riv) for j in jobs}
    if len(sizes) != 1:
        named = ", ".join(f"{j.job}: {len(j.riv)}" for j in jobs)
        raise HotsetError(f"multi-job: every job's RIV must cover the same items, got {named}")
    names = [j.job for j in jobs]
    if len(set(names)) != len(names):
        raise HotsetError(f"multi-job: job names must be distinct, got {names}")
    chosen = [j for j in jobs if j.benefit > limit]
    if not chosen:
        return None
    total = np.zeros(sizes.pop(), dtype=np.float64)
    known = np.zeros(len(total), dtype=bool)
    for j in sorted(chosen, key=lambda j: j.job):  # a fixed order: the same float sums
        has = ~np.isnan(j.riv)
        total[has] += min(j.benefit, MAX_BENEFIT) * j.riv[has]
        known |= has
    total[~known] = np.nan
    return total
