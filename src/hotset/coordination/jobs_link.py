"""A loader's link between iCACHE's multi-job keys and the jobs on its shared namespace.

With ``icache[multijob=true]`` on a Redis namespace that several jobs join, the
loader does at each epoch boundary what §III-D's manager does: it measures the
job's caching benefit from the epoch's mini-batch times -- the first
``benefit_probe`` batches the policy planned without the cache against the next
as many (:func:`hotset.policies.quiver.placement.probe_result`, the probe
Quiver's placement uses) -- publishes it with the job's relative importance
(:mod:`hotset.coordination.job_importance`), reads every job's latest, and gives
them to the policy (``update_jobs``), which keys its next epoch by their adjusted
importance (its shadow heap, swapped in when that epoch begins). This happens
when the epoch closes, after its importance reached the policy, so the snapshot
is part of the state a checkpoint saves from then on, and restoring a checkpoint
does not ask again. An epoch resumed mid-way was not timed from its first batch:
it measures nothing, and the last benefit (if any) is published again. A job that
has measured nothing yet publishes nothing and reads the others.

What the others publish is bounded before it reaches the policy: at most 16 entries
that pass their checks (:mod:`hotset.coordination.job_importance`), each weighing at
most 1,000 (:data:`hotset.importance.multijob.MAX_BENEFIT`); the policy keeps their
one AIV in its state, and it keys what the cache keeps, never which requests the job
may see substituted (its own importance names its H-list). :meth:`JobsLink.stats`
counts what was skipped.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from hotset.coordination.job_importance import SharedJobs
from hotset.engine.roles import ExchangesJobs
from hotset.importance.multijob import relative_importance
from hotset.importance.table import ImportanceTable
from hotset.policies.quiver.placement import probe_result

__all__ = ["JobsLink"]


class JobsLink:
    """Publish this job's benefit and RIV at each epoch's start; key by every job's."""

    def __init__(
        self, shared: SharedJobs, policy: ExchangesJobs, table: ImportanceTable, *, probe: int
    ) -> None:
        """``policy`` is keyed by every job's importance; ``table`` holds this job's."""
        self.shared = shared
        self.policy = policy
        self.table = table
        self.probe = probe
        #: the job's last measured T_cacheless / T_cache; None until one is measured
        self.benefit: float | None = None

    @staticmethod
    def job_name() -> str:
        """A name no other job on the namespace has (a job is one loader)."""
        return uuid.uuid4().hex

    def exchange(self, batch_seconds: Sequence[float]) -> None:
        """An epoch closed: measure (from its batch times, if whole), publish, read,
        and key the policy's next epoch."""
        if self.probe >= 2 and len(batch_seconds) >= 2 * self.probe:
            got = probe_result(self.shared.job, "", list(batch_seconds), probe=self.probe)
            self.benefit = got.benefit
        n = len(self.table)
        if self.benefit is not None:
            scores = self.table.snapshot().scores
            self.shared.publish(self.benefit, relative_importance(scores))
        self.policy.update_jobs(self.shared.read(n))

    def stats(self) -> dict[str, int]:
        """Failed calls, invalid entries skipped and entries aged out, so far."""
        return self.shared.stats()

    def leave(self) -> None:
        """The loader closes: the other jobs stop counting this one."""
        self.shared.leave()
