"""A loader's link between its policy's chunk cycle and the shared namespace's.

A policy that ``joins_cycle`` (Quiver) stays pure: where its cycle starts is an
input, the step the namespace says its jobs load now
(:mod:`hotset.coordination.shared_cycle`), read once, at the first epoch's start and
before the loader records that epoch's start state, so the step is part of the
state a checkpoint saves and a resume replays without asking again. After each
batch it plans, the loader publishes the step the policy loads now, when it
changed (once a chunk), so that jobs started later join there. When the loader
closes, the job releases the chunks it still holds, as if it had consumed them.
"""

from __future__ import annotations

from collections.abc import Callable

from hotset.cachestore.base import CacheKey
from hotset.cachestore.redis_store import CacheUnavailable
from hotset.coordination.chunk_refs import ChunkRefs
from hotset.coordination.shared_cycle import SharedCycle
from hotset.engine.policy import Policy
from hotset.engine.roles import JoinsCycle

__all__ = ["CycleLink"]


class CycleLink:
    """Join the shared chunk cycle before the first epoch; publish where the job is."""

    def __init__(self, shared: SharedCycle, cycle: JoinsCycle, policy: Policy) -> None:
        """``cycle`` and ``policy`` are the same object: its chunk-cycle role
        (:class:`~hotset.engine.roles.JoinsCycle`) and the policy whose holdings the
        job releases when it leaves."""
        self.shared = shared
        self.cycle = cycle
        self.policy = policy
        self._published: int | None = None

    def join(self) -> None:
        """Before an epoch begins: a policy still waiting starts at the shared step."""
        if self.cycle.awaits_join():
            self.cycle.join_cycle(self.shared.current())

    def publish(self) -> None:
        """After a batch is planned: tell the namespace the step the policy loads now."""
        step = self.cycle.cycle_step()
        if step is not None and step != self._published:
            self.shared.publish(step)
            self._published = step

    def leave(self, cache: object, key_of: Callable[[int], CacheKey]) -> None:
        """The loader closes: release the chunks the policy holds in the namespace
        (:meth:`ChunkRefs.leave`); a server that fails now is left to expire them."""
        if not isinstance(cache, ChunkRefs):
            return
        keys = [key_of(cid) for cid in sorted(self.policy.cache_ids())]
        try:
            cache.leave(keys)
        except CacheUnavailable:
            self.shared.failures += 1
