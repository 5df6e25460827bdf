"""Quiver's requests (FAST'20 Algorithm 1): a hit, a substitute, or a co-operative miss.

A request is served by the requested id if it is cached and unused this epoch
(HIT), else by the cached unused id planned earliest in the oldest chunk that has
one (SUBSTITUTION), else by reading a unit of the loading chunk and serving its
earliest-planned unused member (the co-operative MISS), else by reading an id
alone. How far each served id moved from its planned place is counted here.
"""

from __future__ import annotations

from typing import Any

from hotset.engine.outcome import Decision, Outcome
from hotset.errors import HotsetError
from hotset.policies.quiver.chunks import ChunkCycle
from hotset.policies.quiver.epoch import EpochView
from hotset.policies.quiver.holdings import Holdings
from hotset.policies.quiver.loading import ChunkLoading


class Serving:
    """Decides each request from the :class:`Holdings` and the cycle; counts what it served."""

    def __init__(self, holdings: Holdings, loading: ChunkLoading) -> None:
        self.holdings = holdings
        self.loading = loading
        self.cooperative_reads = 0
        self.served_count = 0
        self.displacement_sum = 0
        self.displacement_max = 0

    def access(self, sid: int, cycle: ChunkCycle | None, *, uncached: bool) -> Decision:
        """Serve request ``sid``; ``uncached``: the job plans it without its cache (a probe
        batch, or caching turned off), as a read of an unused id."""
        view, held = self.holdings.view, self.holdings
        if view is None or cycle is None:
            raise HotsetError("quiver: begin_epoch() must come before the first access")
        sid = int(sid)
        if sid < 0 or sid >= len(view.pos):
            raise HotsetError(f"quiver: sample id {sid} outside 0..{len(view.pos) - 1}")
        view.at += 1
        if not view.planned:  # a replayed trace: no substitution, hits where cached
            return Decision(sid, Outcome.HIT if sid in held else Outcome.MISS, sid)
        if uncached:  # read alone, as without hotset
            target = sid if not view.used[sid] else view.earliest_pending()
            return self._serve(sid, Outcome.MISS, sid if target is None else target)
        if view.pending(sid) and sid in held:
            return self._serve(sid, Outcome.HIT, sid)
        substitute = view.substitute(cycle.chunks_in, held.ids, also=cycle.chunks.static)
        if substitute is not None:  # the oldest chunk first: it is consumed and released
            return self._serve(sid, Outcome.SUBSTITUTION, substitute)
        return self._cooperative_miss(sid, cycle, view)

    def _serve(self, requested: int, outcome: Outcome, served: int, **kw: Any) -> Decision:
        assert self.holdings.view is not None
        moved = self.holdings.view.use(served, resident=served in self.holdings)
        self.displacement_sum += moved
        self.displacement_max = max(self.displacement_max, moved)
        self.served_count += 1
        return Decision(requested, outcome, served, **kw)

    def _cooperative_miss(self, sid: int, cycle: ChunkCycle, view: EpochView) -> Decision:
        """Nothing cached is unused: read a unit of the loading chunk, or the id itself.

        A consumed chunk is released first (as after a batch), so the miss reads
        from the chunk the cycle loads next instead of a unit nobody will reuse.
        """
        chunks = cycle.chunks
        gone = tuple(self.loading.advance(cycle, view))
        for queue in (cycle.queue, cycle.static_queue):
            for i, u in enumerate(queue):
                mine = [s for s in chunks.members[u] if view.pending(s)]
                if not mine:
                    continue
                fresh = self.loading.take(chunks, u)
                if fresh is None:
                    break
                queue.pop(i)
                served = min(mine, key=lambda s: int(view.pos[s]))
                self.cooperative_reads += 1
                return self._serve(
                    sid,
                    Outcome.MISS,
                    served,
                    admitted=served in fresh,
                    evicted=gone,
                    unit=chunks.read_unit(u),
                    also_admitted=tuple(s for s in fresh if s != served),
                )
        target = sid if not view.used[sid] else view.earliest_pending()
        if target is None:  # every planned id used (an id planned twice): serve it again
            target = sid
        # read alone: its unit's other members would not be admitted (their chunk is not due)
        return self._serve(sid, Outcome.MISS, target, evicted=gone)
