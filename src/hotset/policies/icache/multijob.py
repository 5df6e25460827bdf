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

What other jobs can change through their snapshots is bounded here: at most
:data:`~hotset.importance.multijob.MAX_JOBS` jobs are kept (the first by name), each
weighs at most :data:`~hotset.importance.multijob.MAX_BENEFIT`, and what the state
keeps of them is their names, benefits and the one AIV they give -- not a float per
item per job -- so a checkpoint does not grow with the jobs on the namespace. The
AIV keys what the H-cache keeps (its heap); which requests are H and which are L --
so which may be served by a substitute -- stays the job's own importance
(:meth:`~hotset.policies.icache.keys.ImportanceKeys.h_list`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.errors import HotsetError
from hotset.importance.multijob import (
    MAX_JOBS,
    JobImportance,
    adjusted_importance,
    check_benefit,
    check_threshold,
)

FloatArray = npt.NDArray[np.float64]


class JobKeys:
    """The own snapshot, the jobs' published (benefit, RIV), and the keys they give."""

    def __init__(self, *, threshold: float) -> None:
        self.threshold = check_threshold(threshold)
        self.own: FloatArray | None = None
        #: (name, benefit) of the jobs in the snapshot, by name (at most MAX_JOBS)
        self.jobs: tuple[tuple[str, float], ...] = ()
        #: their adjusted importance (None: no job eligible)
        self.aiv: FloatArray | None = None
        #: what the last keys were: "aiv" (eligible jobs' AIV), "own", or None (no keys)
        self.source: str | None = None

    def set_own(self, scores: npt.ArrayLike) -> None:
        self.own = np.asarray(scores, dtype=np.float64).copy()

    def set_jobs(self, jobs: Sequence[JobImportance]) -> None:
        """The snapshot of every job sharing the cache (this one included, if it
        publishes), at most :data:`MAX_JOBS` of them by name; replaces the previous one."""
        for j in jobs:
            if not isinstance(j, JobImportance):
                raise HotsetError(f"icache multijob: expected JobImportance, got {j!r}")
        kept = sorted(jobs, key=lambda j: j.job)[:MAX_JOBS]
        self.aiv = adjusted_importance(kept, threshold=self.threshold)
        self.jobs = tuple((j.job, j.benefit) for j in kept)

    def eligible(self) -> list[str]:
        """The jobs whose importance counts now (benefit above the threshold)."""
        return sorted(name for name, benefit in self.jobs if benefit > self.threshold)

    def keys(self) -> FloatArray | None:
        """AIV when a job is eligible, else the own snapshot (None: nothing known yet)."""
        aiv = self.aiv
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
        """Plain lists: what a checkpoint needs to key the heap as before (the jobs'
        names and benefits, and the one AIV they give: no float per item per job)."""
        return {
            "threshold": self.threshold,
            "own": None if self.own is None else [float(x) for x in self.own],
            "jobs": [{"job": name, "benefit": benefit} for name, benefit in self.jobs],
            "aiv": None if self.aiv is None else [float(x) for x in self.aiv],
            "source": self.source,
        }

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state`, or a state that held every job's RIV (an older one)."""
        for key in ("own", "jobs"):
            if key not in state:
                raise HotsetError(f"icache state: multijob is missing {key!r}")
        own = state["own"]
        self.own = None if own is None else np.asarray(own, dtype=np.float64)
        jobs = list(state["jobs"])
        if "aiv" not in state:  # saved with each job's RIV: the AIV follows from them
            self.set_jobs(
                [
                    JobImportance(str(j["job"]), float(j["benefit"]), np.asarray(j["riv"]))
                    for j in jobs
                ]
            )
        else:
            aiv = state["aiv"]
            self.aiv = None if aiv is None else np.asarray(aiv, dtype=np.float64)
            self.jobs = tuple(
                (str(j["job"]), check_benefit(str(j["job"]), j["benefit"])) for j in jobs
            )
        source = state.get("source")
        self.source = None if source is None else str(source)
