"""What keys iCACHE's H-cache when several jobs share it (HPCA'23 §III-D).

:class:`~hotset.policies.icache.ICache` keys its min-heap, and picks its H-list,
by one importance snapshot. With ``multijob=True`` that snapshot is not the
job's own losses but the adjusted importance (AIV) of every job sharing the
cache (:func:`hotset.importance.multijob.adjusted_importance`): jobs publish
their measured ``Ratio_benefit`` and relative importance, and the snapshot of
all of them is an *input* at an epoch boundary (:meth:`JobKeys.set_jobs`),
as the importance snapshot is, so the cache stays a pure function of its inputs
and a checkpoint that holds both resumes to the same decisions.

When no job is cache-eligible there is no AIV and the cache keeps keying by
the job's own importance (the single-job rule): the paper gives no rule for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.errors import HotsetError
from hotset.importance.multijob import (
    JobImportance,
    adjusted_importance,
    check_threshold,
)

FloatArray = npt.NDArray[np.float64]


class JobKeys:
    """The own snapshot, the jobs' published (benefit, RIV), and the keys they give."""

    def __init__(self, *, threshold: float) -> None:
        self.threshold = check_threshold(threshold)
        self.own: FloatArray | None = None
        self.jobs: tuple[JobImportance, ...] = ()
        #: what the last keys were: "aiv" (eligible jobs' AIV), "own", or None (no keys)
        self.source: str | None = None

    def set_own(self, scores: npt.ArrayLike) -> None:
        self.own = np.asarray(scores, dtype=np.float64).copy()

    def set_jobs(self, jobs: Sequence[JobImportance]) -> None:
        """The snapshot of every job sharing the cache (this one included, if it
        publishes); replaces the previous one."""
        for j in jobs:
            if not isinstance(j, JobImportance):
                raise HotsetError(f"icache multijob: expected JobImportance, got {j!r}")
        self.jobs = tuple(jobs)

    def eligible(self) -> list[str]:
        """The jobs whose importance counts now (benefit above the threshold)."""
        return sorted(j.job for j in self.jobs if j.benefit > self.threshold)

    def keys(self) -> FloatArray | None:
        """AIV when a job is eligible, else the own snapshot (None: nothing known yet)."""
        aiv = adjusted_importance(self.jobs, threshold=self.threshold)
        if aiv is not None:
            if self.own is not None and len(aiv) != len(self.own):
                raise HotsetError(
                    f"icache multijob: the jobs' RIV cover {len(aiv)} items, this job's "
                    f"importance {len(self.own)}: jobs sharing a cache train one data set"
                )
            self.source = "aiv"
            return aiv
        self.source = None if self.own is None else "own"
        return self.own

    def summary(self) -> dict[str, Any]:
        return {
            "multijob_keys": self.source,
            "multijob_jobs": len(self.jobs),
            "multijob_eligible": self.eligible(),
        }

    def state(self) -> dict[str, Any]:
        """Plain lists: what a checkpoint needs to key the heap as before."""
        return {
            "threshold": self.threshold,
            "own": None if self.own is None else [float(x) for x in self.own],
            "jobs": [
                {"job": j.job, "benefit": j.benefit, "riv": [float(x) for x in j.riv]}
                for j in self.jobs
            ],
            "source": self.source,
        }

    def load_state(self, state: Mapping[str, Any]) -> None:
        for key in ("own", "jobs"):
            if key not in state:
                raise HotsetError(f"icache state: multijob is missing {key!r}")
        own = state["own"]
        self.own = None if own is None else np.asarray(own, dtype=np.float64)
        self.jobs = tuple(
            JobImportance(str(j["job"]), float(j["benefit"]), np.asarray(j["riv"], np.float64))
            for j in state["jobs"]
        )
        source = state.get("source")
        self.source = None if source is None else str(source)
