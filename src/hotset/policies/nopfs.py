"""NoPFS-style placement: cache what the seeded future uses most, then soonest.

NoPFS (Dryden et al., "Clairvoyant prefetching for distributed machine learning
I/O", SC'21; ImPACT TC'25 [27]) observes that a job's access stream is a pure
function of its seed: every worker can compute, before training starts, which
samples it will read in every epoch and when. It then fills its fastest storage
with the samples it will read *most often*, ties going to the one it reads
*first*, and never needs an eviction policy.

This policy does the same for one cache: it is given ``future(epoch)``, this
rank's order of any epoch (the system passes the seeded sampler's), and at the
first epoch of every window of ``horizon`` epochs it ranks the ids by

1. their access count over the window (more first),
2. whether they are resident already (kept first: a new window whose counts tie
   does not churn a cache that is as good as any other),
3. their first access in the window (sooner first), then id,

and takes them greedily while they fit the budget (bytes and items): the
*placement*. An access to a resident id hits; a miss is admitted iff the id is
placed (evicting, oldest first, residents of an earlier window that the new one
did not place); every other miss just reads. Filling on first use is NoPFS's
prefetch of its placement in first-access order, with the same storage reads.

With one rank every id is read once per epoch, so counts tie and the placement is
the ids read first in the first window: a static subset hit once per later epoch
(hit ratio about the cache fraction, like MinIO). Under data parallelism each
rank's shard differs every epoch, so a rank reads some ids more often than
others and the placement follows them -- NoPFS's point.

Exactly-once: the policy never substitutes, so every planned id is served.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

import numpy as np

from hotset.engine.arrays import IntArray
from hotset.engine.budget import Budget
from hotset.engine.outcome import Decision, Outcome
from hotset.engine.policy import Policy
from hotset.errors import HotsetError
from hotset.policies._common import budget_limits, check_id, check_state_name, size_list

#: epochs of the seeded future one placement looks at, unless told otherwise
HORIZON = 10

Future = Callable[[int], IntArray]


def rank_ids(orders: list[IntArray], resident: IntArray) -> IntArray:
    """Every id the orders read, most-read first, then resident, then first read, then id."""
    concat = np.concatenate(orders) if orders else np.zeros(0, dtype=np.int64)
    if not len(concat):
        return np.zeros(0, dtype=np.int64)
    ids, first, counts = np.unique(concat, return_index=True, return_counts=True)
    held = np.isin(ids, resident)
    order = np.lexsort((ids, first, ~held, -counts))
    return np.asarray(ids[order], dtype=np.int64)


class NoPFS(Policy):
    """Static placement from the seeded future (see the module docstring)."""

    name: ClassVar[str] = "nopfs"

    def __init__(
        self, budget: Budget, *, seed: int = 0, future: Future, horizon: int = HORIZON
    ) -> None:
        super().__init__(budget, seed=seed)
        if not callable(future):
            raise HotsetError(f"nopfs: future must be a function of the epoch, got {future!r}")
        if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
            raise HotsetError(f"nopfs: horizon must be an integer >= 1 (epochs), got {horizon!r}")
        self.future = future
        self.horizon = horizon
        self._cap_b, self._cap_i = budget_limits(budget)
        self._sizes = size_list(budget)
        self._res: OrderedDict[int, None] = OrderedDict()  # residents, oldest first
        self._placed: set[int] = set()
        self._stale: OrderedDict[int, None] = OrderedDict()  # residents not placed, oldest first
        self._window = -1  # first epoch of the current placement's window (-1: none yet)

    # -- placement --------------------------------------------------------------------
    def begin_epoch(self, epoch: int, planned: IntArray | None = None) -> None:
        super().begin_epoch(epoch, planned)
        if planned is not None and not np.array_equal(planned, self.future(self.epoch)):
            raise HotsetError(
                f"nopfs: epoch {self.epoch}'s order is not the seeded future's; NoPFS needs an "
                "order that is a function of the seed (a random order, not importance sampling)"
            )
        window = self._window
        if window < 0 or not window <= self.epoch < window + self.horizon:
            self._place(self.epoch)

    def _place(self, start: int) -> None:
        """The placement of the window starting at epoch ``start``."""
        epochs = range(start, start + self.horizon)
        orders = [np.asarray(self.future(e), dtype=np.int64) for e in epochs]
        resident = np.fromiter(self._res, dtype=np.int64, count=len(self._res))
        placed: set[int] = set()
        room_b, room_i = self._cap_b, self._cap_i
        for sid in rank_ids(orders, resident).tolist():
            if room_i <= 0 or room_b <= 0:
                break
            size = self._size(sid)
            if size <= room_b:
                placed.add(sid)
                room_b -= size
                room_i -= 1
        self._placed = placed
        self._stale = OrderedDict((s, None) for s in self._res if s not in placed)
        self._window = start

    def _size(self, sid: int) -> int:
        return 1 if self._sizes is None else self._sizes[sid]

    # -- one access ---------------------------------------------------------------------
    def access(self, sid: int) -> Decision:
        sid = check_id(sid, self._sizes)
        if sid in self._res:
            return Decision(sid, Outcome.HIT, sid)
        if sid not in self._placed:
            return Decision(sid, Outcome.MISS, sid)
        size = self._size(sid)
        evicted: list[int] = []
        while self._stale and not self._fits(size):
            victim, _ = self._stale.popitem(last=False)
            del self._res[victim]
            self.used_bytes -= self._size(victim)
            evicted.append(victim)
        self.used_items = len(self._res)
        if not self._fits(size):  # pragma: no cover - a placement fits the budget
            return Decision(sid, Outcome.MISS, sid, evicted=tuple(evicted))
        self._res[sid] = None
        self.used_bytes += size
        self.used_items = len(self._res)
        return Decision(sid, Outcome.MISS, sid, admitted=True, evicted=tuple(evicted))

    def _fits(self, size: int) -> bool:
        return self.used_bytes + size <= self._cap_b and len(self._res) + 1 <= self._cap_i

    # -- views --------------------------------------------------------------------------
    def __contains__(self, sid: object) -> bool:
        return sid in self._res

    def resident(self) -> frozenset[int]:
        return frozenset(self._res)

    def summary(self) -> dict[str, Any]:
        return {"placed": len(self._placed), "horizon": self.horizon, "window": self._window}

    # -- resumption ---------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The residents in age order, the placement and its window (plain lists)."""
        return {
            "policy": self.name,
            "epoch": self.epoch,
            "resident": list(self._res),
            "placed": sorted(self._placed),
            "window": self._window,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        check_state_name(state, self.name)
        for key in ("resident", "placed", "window"):
            if key not in state:
                raise HotsetError(f"nopfs state: missing {key!r}")
        res: OrderedDict[int, None] = OrderedDict()
        for sid in state["resident"]:
            sid = check_id(sid, self._sizes)
            if sid in res:
                raise HotsetError(f"nopfs state: id {sid} is resident twice")
            res[sid] = None
        used = sum(self._size(s) for s in res)
        if not self.budget.fits(used, len(res)):
            raise HotsetError(f"nopfs state holds {len(res)} ids / {used} bytes, over the budget")
        self._res = res
        self._placed = {check_id(s, self._sizes) for s in state["placed"]}
        self._stale = OrderedDict((s, None) for s in res if s not in self._placed)
        self._window = int(state["window"])
        self.used_bytes, self.used_items = used, len(res)
        self.epoch = int(state["epoch"])
