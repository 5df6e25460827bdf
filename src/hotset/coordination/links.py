"""One loader's coordination with the jobs and ranks on its namespace, behind one object.

A policy takes part in coordination by the roles it takes on
(:mod:`hotset.engine.roles`): it joins a chunk cycle (:class:`JoinsCycle`), places by
benefit (:class:`PlacesByBenefit`), keys by every job's importance
(:class:`ExchangesJobs`), evicts groups in concert (:class:`GroupsEvictions`). Each
needs a link to records beside the cache (:mod:`hotset.coordination`), and only where
the cache is a namespace other jobs share (:class:`SharedNamespace`). The loader used to
build each link by asking for a cache's concrete type and a system's option, and to
call each one at its own place; :func:`connect` now builds them all from the roles,
and the loader drives one :class:`Coordination` at four moments: before an epoch's
start state is taken, at its start, after each batch, when it closes, and when the
loader closes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hotset.cachestore.base import CacheKey, CacheStore
from hotset.coordination.chunk_refs import ChunkRefs
from hotset.coordination.cycle_link import CycleLink
from hotset.coordination.job_importance import SharedJobs
from hotset.coordination.jobs_link import JobsLink
from hotset.coordination.namespace import SharedCache, SharedNamespace, shared_namespace
from hotset.coordination.probe_board import ProbeBoard
from hotset.coordination.probe_link import ProbeLink, job_id
from hotset.coordination.shared_cycle import SharedCycle
from hotset.engine.policy import Policy
from hotset.engine.roles import (
    ExchangesJobs,
    GroupsEvictions,
    JoinsCycle,
    PlacesByBenefit,
    missing_role,
)
from hotset.importance.table import ImportanceTable
from hotset.policies.quiver.placement import from_record

__all__ = ["Coordination", "Where", "connect", "evicting_in_concert"]


@dataclass(frozen=True)
class Where:
    """Where a loader runs: its cache as opened, and who it is among the jobs."""

    #: the cache as opened (None: the system caches nothing)
    cache: object | None
    #: whether other jobs may open the same namespace (a private one is dropped at close)
    shared: bool
    #: the data set's identity (a probe record names it)
    dataset: str
    rank: int
    world_size: int
    batch_size: int
    #: the bytes this job's policy plans in (a probe record's budget)
    budget_bytes: int


@dataclass
class Coordination:
    """A loader's links to the other jobs; each None where its policy takes no part."""

    #: where a policy that joins a shared chunk cycle learns and tells where it is
    cycle: CycleLink | None = None
    #: where iCACHE's multi-job keys learn the other jobs' benefit and RIV (§III-D)
    jobs: JobsLink | None = None
    #: where a policy that places by benefit publishes its probe and reads the others'
    probes: ProbeLink | None = None

    def before_epoch(self, epoch: int) -> None:
        """Before an epoch's start state is taken (so what is applied is in it): the
        probe board's placement. Not for an epoch resumed from a checkpoint."""
        if self.probes is not None:
            self.probes.before_epoch(epoch)

    def epoch_starts(self) -> None:
        """An epoch begins: a policy still waiting joins the shared chunk cycle."""
        if self.cycle is not None:
            self.cycle.join()

    def batch_done(self, batch_seconds: Sequence[float]) -> None:
        """A batch was yielded, in an epoch timed from its first batch."""
        if self.probes is not None:
            self.probes.after_batch(batch_seconds)

    def epoch_closed(self, batch_seconds: Sequence[float]) -> None:
        """An epoch closed, its importance given to the policy: the jobs' exchange
        (``batch_seconds`` empty where the epoch was not timed from its first batch)."""
        if self.jobs is not None:
            self.jobs.exchange(batch_seconds)

    def leave(self, cache: object, key_of: Callable[[int], CacheKey]) -> None:
        """The loader closes: release its chunks, stop counting in the jobs' records."""
        if self.cycle is not None:  # done with its chunks: the jobs still running need room
            self.cycle.leave(cache, key_of)
        if self.jobs is not None:
            self.jobs.leave()
        if self.probes is not None:  # its probe stops counting for the others' placement
            self.probes.leave()


def evicting_in_concert(
    cache: CacheStore, policy: Policy, *, shared: bool, scope: str
) -> CacheStore:
    """``cache``, wrapped so that jobs sharing it evict a policy's eviction group once all
    have released it, where the policy groups its evictions and the cache is shared;
    else ``cache`` itself. ``scope`` separates the data sets of a content-addressed
    namespace (each its own chunks)."""
    groups = policy.eviction_groups() if shared and isinstance(policy, GroupsEvictions) else None
    if groups is None or not isinstance(cache, SharedCache):
        return cache
    return ChunkRefs(cache, groups.groups, force_after_s=groups.force_after_s, scope=scope)


def connect(
    policy: Policy, table: ImportanceTable, *, joins_cycle: bool, where: Where
) -> Coordination:
    """Every link ``policy``'s roles ask for, on ``where``'s namespace where it is shared.

    ``joins_cycle`` is the system's capability flag: a policy that sets it without the
    role is an error naming the role, as every driver names one.
    """
    namespace = shared_namespace(where.cache) if where.shared else None
    return Coordination(
        cycle=_cycle(policy, namespace, joins_cycle),
        jobs=_jobs(policy, table, namespace, where),
        probes=_probes(policy, namespace, where),
    )


def _cycle(
    policy: Policy, namespace: SharedNamespace | None, joins_cycle: bool
) -> CycleLink | None:
    """Quiver's getCurrentChunk: None without a shared namespace (the policy starts at 0)."""
    if not joins_cycle or namespace is None:
        return None
    if not isinstance(policy, JoinsCycle):
        raise missing_role(policy, "JoinsCycle", "joins_cycle")
    return CycleLink(SharedCycle(namespace), policy, policy)


def _jobs(
    policy: Policy, table: ImportanceTable, namespace: SharedNamespace | None, where: Where
) -> JobsLink | None:
    """``icache[multijob=true]`` alone on its ranks, on a namespace shared by jobs."""
    if not isinstance(policy, ExchangesJobs) or where.world_size != 1:
        return None
    requests = policy.job_probe_requests()
    if requests is None or namespace is None:
        return None
    shared = SharedJobs(namespace, JobsLink.job_name())
    return JobsLink(shared, policy, table, probe=requests // where.batch_size)


def _probes(policy: Policy, namespace: SharedNamespace | None, where: Where) -> ProbeLink | None:
    """A policy that places by benefit: the namespace's board (none on a private cache:
    it places by its own probe)."""
    if not (isinstance(policy, PlacesByBenefit) and policy.wants_board()):
        return None
    board = None if namespace is None else ProbeBoard(namespace, check=from_record)
    return ProbeLink(
        board,
        policy,
        job=job_id(where.rank),
        dataset=where.dataset,
        budget_bytes=where.budget_bytes,
    )
