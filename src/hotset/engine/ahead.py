"""Which cached ids were fetched ahead: read from storage before anyone asked for them.

Why it is counted apart: an *exact hit* is a request served from bytes the cache
kept since an earlier use -- what Belady's MIN bounds. A system that reads ahead
(a chunk read that admits its other members, Scout's ranged reads, Brand's slots,
Quiver's and iCACHE's background loads) serves many requests from bytes that
arrived in the cache without being asked for; the first use of such bytes is
*fetched ahead*, not a hit: the store was paid for them by this job's storage
requests (counted in ``storage_requests``/``storage_bytes``). Counting them as hits
put Scout's "hit ratio" of 0.908 beside a Belady bound of 0.185.

The tracker follows a batch's decisions in their order: an id admitted by a
decision that did not serve it (``Decision.also_admitted``, or a background load)
is *ahead*; a HIT on an ahead id is a fetched-ahead use, after which the id is an
ordinary resident (a later hit is an exact hit); any use or eviction clears it.
It changes no decision: it only tells the counters how to name a HIT.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from hotset.engine.arrays import IntArray
from hotset.engine.outcome import Outcome
from hotset.errors import HotsetError

_HIT = int(Outcome.HIT)
_NONE: IntArray = np.zeros(0, dtype=np.int64)


class AheadTracker:
    """Ids (``0..n-1``) in the cache whose bytes were read ahead and not used yet.

    A read unit cached whole (cache id ``n + unit``) stands for its members:
    ``members(unit)`` names them (the policy's layout; None: no units)."""

    def __init__(self, n: int, members: Callable[[int], IntArray] | None = None) -> None:
        self.n = n
        self.members = members
        self._ahead = np.zeros(n, dtype=bool)
        self._count = 0

    def _ids(self, cache_ids: Iterable[int]) -> Iterator[int]:
        """Sample ids of cache ids: a sample itself, a whole unit its members."""
        for a in cache_ids:
            if a < self.n:
                yield a
            elif self.members is not None:
                yield from self.members(a - self.n).tolist()

    def __len__(self) -> int:
        return self._count

    def batch(
        self,
        outcomes: npt.NDArray[np.int8],
        served: IntArray,
        evictions: Mapping[int, Sequence[int]],
        also: Mapping[int, Sequence[int]],
    ) -> IntArray:
        """Follow one batch's requests in order; the positions of the HITs that were
        fetched-ahead uses.

        ``evictions``/``also`` map a request's position to the ids its decision
        evicted / admitted besides the served one.
        """
        if not self._count and not also:
            return _NONE  # nothing ahead and nothing fetched ahead: every hit is a hit
        ahead, used = self._ahead, []
        out_list, served_list = outcomes.tolist(), served.tolist()
        for j, sid in enumerate(served_list):
            if ahead[sid]:
                if out_list[j] == _HIT:
                    used.append(j)
                ahead[sid] = False
                self._count -= 1
            gone = evictions.get(j)
            if gone:
                self.drop(gone)
            more = also.get(j)
            if more:
                self.add(more, besides=sid)
        return np.asarray(used, dtype=np.int64) if used else _NONE

    def add(self, cache_ids: Iterable[int], *, besides: int = -1) -> None:
        """Cache ids admitted without being asked for, but ``besides`` (just served)."""
        ahead = self._ahead
        for a in self._ids(cache_ids):
            if a != besides and not ahead[a]:
                ahead[a] = True
                self._count += 1

    def drop(self, cache_ids: Iterable[int]) -> None:
        """Cache ids that left the cache."""
        if not self._count:
            return
        ahead = self._ahead
        for e in self._ids(cache_ids):
            if ahead[e]:
                ahead[e] = False
                self._count -= 1

    def ids(self) -> IntArray:
        """The ahead ids, ascending (what a checkpoint keeps)."""
        return np.flatnonzero(self._ahead).astype(np.int64)

    def load(self, ids: Iterable[int]) -> None:
        """Set the ahead ids (from :meth:`ids`); ids outside ``0..n-1`` are a HotsetError."""
        arr = np.asarray(list(ids), dtype=np.int64)
        if len(arr) and (int(arr.min()) < 0 or int(arr.max()) >= self.n):
            raise HotsetError(f"fetched-ahead ids outside 0..{self.n - 1}")
        self._ahead[:] = False
        self._ahead[arr] = True
        self._count = int(self._ahead.sum())
