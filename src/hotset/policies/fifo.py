"""FIFO: evict whatever entered the cache first; a hit changes nothing.

This module also holds :class:`QueueCache`, the ordered-dict cache that FIFO and
LRU both are (they differ only in whether a hit
moves the id to the back of the queue).

Speed: ``replay`` runs a tight loop over a Python list with the dict's bound
methods held in locals. An ``OrderedDict`` gives O(1) membership, O(1)
pop-oldest and O(1) move-to-back, which is all FIFO and LRU need; a plain dict
would make pop-oldest degrade (deleted slots pile up at its front) and numpy
arrays do not help because every step depends on the previous one.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from hotset.engine.arrays import IntArray
from hotset.engine.budget import Budget
from hotset.engine.outcome import Decision, Outcome
from hotset.engine.policy import Policy
from hotset.errors import HotsetError
from hotset.policies._common import (
    _MISS,
    budget_limits,
    check_id,
    check_state_name,
    check_trace,
    outcomes,
    size_list,
)


class QueueCache(Policy):
    """An ordered cache: ids leave from the front; subclasses decide who moves back.

    ``_queue`` maps id -> byte size (1 without sizes), oldest first. Both limits
    of the budget hold after every access; an id that alone exceeds a limit is
    never admitted (MISS, ``admitted=False``) and evicts nothing.
    """

    name: ClassVar[str] = "queue"
    #: whether a hit moves the id to the back of the queue (LRU) or not (FIFO)
    touch_on_hit: ClassVar[bool] = False

    def __init__(self, budget: Budget, *, seed: int = 0) -> None:
        super().__init__(budget, seed=seed)
        self._cap_b, self._cap_i = budget_limits(budget)
        self._sizes = size_list(budget)
        self._queue: OrderedDict[int, int] = OrderedDict()

    # -- queries -----------------------------------------------------------------
    def __contains__(self, sid: object) -> bool:
        return sid in self._queue

    def resident(self) -> frozenset[int]:
        return frozenset(self._queue)

    def _size(self, sid: int) -> int:
        return 1 if self._sizes is None else self._sizes[sid]

    # -- one access --------------------------------------------------------------
    def access(self, sid: int) -> Decision:
        sid = check_id(sid, self._sizes)
        queue = self._queue
        if sid in queue:
            if self.touch_on_hit:
                queue.move_to_end(sid)
            return Decision(sid, Outcome.HIT, sid)
        size = self._size(sid)
        if size > self._cap_b or self._cap_i < 1:
            return Decision(sid, Outcome.MISS, sid, admitted=False)
        evicted: list[int] = []
        used_b = self.used_bytes + size
        while used_b > self._cap_b or len(queue) >= self._cap_i:
            victim, victim_size = queue.popitem(last=False)
            used_b -= victim_size
            evicted.append(victim)
        queue[sid] = size
        self.used_bytes = used_b
        self.used_items = len(queue)
        return Decision(sid, Outcome.MISS, sid, admitted=True, evicted=tuple(evicted))

    # -- a whole trace -----------------------------------------------------------
    def replay(self, trace: IntArray) -> npt.NDArray[np.int8]:
        ids = check_trace(trace, self._sizes)
        out = bytearray(len(ids))  # zero is Outcome.HIT
        if self._sizes is None:
            self._replay_unit(ids, out)
        else:
            self._replay_sized(ids, out, self._sizes)
        self.used_items = len(self._queue)
        return outcomes(out)

    def _replay_unit(self, ids: list[int], out: bytearray) -> None:
        """Every id weighs one byte: both limits collapse into one item count."""
        queue = self._queue
        cap = min(self._cap_b, self._cap_i)
        pop = queue.popitem
        miss = _MISS
        if self.touch_on_hit:
            move = queue.move_to_end
            for i, sid in enumerate(ids):
                if sid in queue:
                    move(sid)
                    continue
                out[i] = miss
                if cap < 1:
                    continue
                if len(queue) >= cap:
                    pop(False)
                queue[sid] = 1
        else:
            for i, sid in enumerate(ids):
                if sid in queue:
                    continue
                out[i] = miss
                if cap < 1:
                    continue
                if len(queue) >= cap:
                    pop(False)
                queue[sid] = 1
        self.used_bytes = len(queue)

    def _replay_sized(self, ids: list[int], out: bytearray, sizes: list[int]) -> None:
        queue = self._queue
        cap_b, cap_i = self._cap_b, self._cap_i
        pop = queue.popitem
        move = queue.move_to_end
        touch = self.touch_on_hit
        miss = _MISS
        used_b = self.used_bytes
        for i, sid in enumerate(ids):
            if sid in queue:
                if touch:
                    move(sid)
                continue
            out[i] = miss
            size = sizes[sid]
            if size > cap_b or cap_i < 1:
                continue
            used_b += size
            while used_b > cap_b or len(queue) >= cap_i:
                used_b -= pop(False)[1]
            queue[sid] = size
        self.used_bytes = used_b

    # -- resumption --------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        return {
            "policy": self.name,
            "epoch": self.epoch,
            "order": list(self._queue),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        check_state_name(state, self.name)
        queue: OrderedDict[int, int] = OrderedDict()
        for sid in state["order"]:
            sid = check_id(sid, self._sizes)
            queue[sid] = self._size(sid)
        used_b = sum(queue.values())
        if not self.budget.fits(used_b, len(queue)):
            raise HotsetError(
                f"{self.name} state holds {len(queue)} ids / {used_b} bytes, over the budget"
            )
        self._queue = queue
        self.used_bytes = used_b
        self.used_items = len(queue)
        self.epoch = int(state["epoch"])


class FIFO(QueueCache):
    """First in, first out: the admission order is the eviction order."""

    name: ClassVar[str] = "fifo"
    touch_on_hit: ClassVar[bool] = False
