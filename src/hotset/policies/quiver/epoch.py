"""One epoch of Quiver's substitutable hits: who is planned where, who is used, who can serve.

:class:`EpochView` answers the policy's three questions in logarithmic time:
is the requested id unused and cached (an exact hit); which cached unused id
is planned earliest in the oldest chunk that has one (the substitute); which
id is the earliest still pending (a read when nothing cached can serve). It
keeps, per chunk, a heap of its unused residents by planned position (stale
entries are skipped when they surface) and their count, which tells the chunk
cycle when a chunk is consumed.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

import numpy as np

from hotset.engine.arrays import IntArray
from hotset.policies.quiver.window import UnusedPositions


class EpochView:
    """Planned positions, used flags and per-chunk unused residents of one epoch."""

    def __init__(
        self,
        n: int,
        planned: IntArray | None,
        *,
        chunk_of: list[int],
        k: int,
        lookahead: int | None = None,
        also_on_time: bool = False,
    ) -> None:
        self.chunk_of = chunk_of
        #: each id's first planned position this epoch (-1: not planned)
        self.pos = np.full(n, -1, dtype=np.int64)
        self.used = bytearray(n)
        self.planned = planned is not None
        self.order: list[int] = [] if planned is None else np.asarray(planned).tolist()
        if self.order:
            # an id planned twice keeps its first position (each use serves one id)
            ids, first = np.unique(np.asarray(planned, dtype=np.int64), return_index=True)
            self.pos[ids] = first
        self.at = 0  # requests made so far
        self._head = 0  # no id before this planned position is unused
        self._heaps: dict[int, list[tuple[int, int]]] = {}
        #: per chunk, its resident ids planned and unused
        self.unused = [0] * k
        #: substitutes come from the next ``lookahead`` unused planned ids (None: any)
        self.lookahead = lookahead
        self._window = (
            UnusedPositions(len(self.order)) if lookahead is not None and self.order else None
        )
        #: the ``also`` chunk (the static set) substitutes only ids planned by now, unless
        #: nothing else can: see :meth:`substitute`
        self.also_on_time = also_on_time

    def pending(self, sid: int) -> bool:
        """Whether ``sid`` is planned this epoch and not used yet."""
        return sid < len(self.pos) and self.pos[sid] >= 0 and not self.used[sid]

    def add_residents(self, sids: Iterable[int]) -> None:
        """``sids`` are cached now: those pending can serve."""
        for sid in sids:
            if self.pending(sid):
                c = self.chunk_of[sid]
                heapq.heappush(self._heaps.setdefault(c, []), (int(self.pos[sid]), sid))
                self.unused[c] += 1

    def drop_resident(self, sid: int) -> None:
        """``sid`` left the cache."""
        if self.pending(sid):
            self.unused[self.chunk_of[sid]] -= 1

    def use(self, sid: int, *, resident: bool) -> int:
        """Serve ``sid`` at the current request; how far it moved from its planned place."""
        if resident and self.pending(sid):
            self.unused[self.chunk_of[sid]] -= 1
        if self._window is not None and self.pending(sid):
            self._window.mark_used(int(self.pos[sid]))
        self.used[sid] = 1
        pos = int(self.pos[sid])
        return abs(pos - (self.at - 1)) if pos >= 0 else 0

    def substitute(
        self, chunks: Iterable[int], resident: set[int], *, also: int | None = None
    ) -> int | None:
        """The unused resident planned earliest in the first of ``chunks`` that has one,
        or in chunk ``also`` (the static set) when that one is planned earlier still
        (``also_on_time``: and planned before the current request, i.e. overdue, unless
        no chunk has one); with a ``lookahead``, only one among the next ``lookahead``
        unused planned ids."""
        first = None
        end = None
        if self._window is not None and self.lookahead is not None:
            end = self._window.end_of(self.lookahead)
        for c in chunks:
            first = self._top(c, resident)
            if first is not None and (end is None or self.pos[first] <= end):
                break
            first = None
        other = None if also is None else self._top(also, resident)
        if other is not None and end is not None and self.pos[other] > end:
            other = None
        # the static set is held all along: pulling its ids forward whenever they are
        # planned earlier than the front chunk's would serve the same ids early in every
        # epoch; with also_on_time, ids not due yet wait for their turn (their own request)
        if (
            other is not None
            and first is not None
            and self.also_on_time
            and (self.pos[other] >= self.at)
        ):
            other = None
        if other is not None and (first is None or self.pos[other] < self.pos[first]):
            return other
        return first

    def _top(self, chunk: int, resident: set[int]) -> int | None:
        """Chunk ``chunk``'s unused resident planned earliest (stale entries dropped)."""
        used = self.used
        heap = self._heaps.get(chunk)
        while heap and (used[heap[0][1]] or heap[0][1] not in resident):
            heapq.heappop(heap)
        return heap[0][1] if heap else None

    def earliest_pending(self) -> int | None:
        """The planned id earliest in the order that is not used yet."""
        order, used = self.order, self.used
        while self._head < len(order) and used[order[self._head]]:
            self._head += 1
        return order[self._head] if self._head < len(order) else None

    @property
    def over(self) -> bool:
        """Whether every planned request of the epoch has been made."""
        return self.at >= len(self.order)
