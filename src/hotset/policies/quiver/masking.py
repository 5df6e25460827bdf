"""Quiver's failure masking (FAST'20 §4.8): serve substitutes from what is left, reload behind.

A driver reports the cache entries it failed to read (``Policy.cache_lost``);
with ``mask_failures`` the policy stops holding them, so no later request is
planned as a hit on one, and the chunk cycle reads their units back as
background loads (once an epoch) rather than one read per request on the
critical path.
"""

from __future__ import annotations

from collections.abc import Sequence

from hotset.policies.quiver.chunks import ChunkCycle
from hotset.policies.quiver.holdings import Holdings


class FailureMask:
    """The lost ids to evict and the units read back this epoch; off unless ``enabled``."""

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        #: ids dropped as lost, whose cache deletes the next background() plans
        self._lost: list[int] = []
        #: units read back this epoch after a loss: one lost again (a put refused in a
        #: full shared namespace) is not read back again, so a loss costs one unit read
        self._reloaded: set[int] = set()
        self.masked_losses = 0

    def begin_epoch(self) -> None:
        """A new epoch may read each unit back once more."""
        self._reloaded = set()

    def take_lost(self, holdings: Holdings) -> list[int]:
        """The ids dropped as lost since the last call that are not held again: they
        leave the cache's books too (a put of a reload is then not skipped)."""
        lost = [s for s in self._lost if s not in holdings]
        self._lost = []
        return lost

    def report(
        self, ids: Sequence[int], *, unreachable: bool, cycle: ChunkCycle | None, holdings: Holdings
    ) -> None:
        """Drop the lost ids' units from ``holdings`` and queue the units still needed
        this epoch at the front of ``cycle``'s loading; see ``Quiver.cache_lost``."""
        view = holdings.view
        if not self.enabled or unreachable or cycle is None or view is None:
            return
        chunks = cycle.chunks
        # a unit's members are written together and go together (a flush, a lost node)
        units = {int(chunks.load_of[int(s)]) for s in ids}
        lost = sorted(s for u in units for s in chunks.members[u] if s in holdings)
        requeue: dict[int, None] = {}  # the units this epoch still needs a member of
        for sid in lost:
            holdings.evict(sid)
            self._lost.append(sid)
            u = int(chunks.load_of[sid])
            if view.pending(sid) and u not in self._reloaded:
                requeue[u] = None
        self._reloaded.update(requeue)
        self.masked_losses += len(lost)
        static = [u for u in requeue if int(chunks.chunk_of_unit[u]) == chunks.static]
        loading = [u for u in requeue if int(chunks.chunk_of_unit[u]) in cycle.chunks_in]
        cycle.static_queue[:0] = [u for u in static if u not in cycle.static_queue]
        cycle.queue[:0] = [u for u in loading if u not in cycle.queue]
