"""Planning in the main process: one :class:`BatchPlan` per batch, decided by the System.

Every policy and sampler call happens here, in one thread of one process, in a
fixed order; DataLoader workers only execute plans (move bytes). That keeps
the decisions exactly those of the simulator for the same inputs.

Feedback lag, made deterministic
--------------------------------
A DataLoader plans ahead of training: with ``W`` workers and prefetch factor
``P`` it has asked for batch ``k + W*P`` by the time the training loop holds
batch ``k``. The planner therefore applies feedback with a fixed lag ``L``
(``W*P``, 0 without workers): feedback given while the loop held batch ``b`` is
*tagged* ``b`` and applied (``system.feedback``) just before batch ``b + L + 1``
is planned, or at the end of the epoch. A simulator loop that applies the same
losses with the same lag makes the same decisions (``tests/torch`` checks it).

Cache writes
------------
For each batch the planner also computes its net cache operations in decision
order: ids whose last operation in the batch was an eviction are ``deletes``;
ids whose last operation was an admission are ``puts`` (their bytes are the
batch's own storage reads). Workers apply deletes then puts, batch after batch
in ``seq`` order, so the cache holds at most the policy's resident set and never
exceeds the budget. ``wait_for`` is the ``seq`` of the latest earlier batch that
put one of this batch's cached ids: a worker waits for that write before reading.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.errors import HotsetError
from hotset.policies.base import IntArray, Outcome
from hotset.systems.base import System

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class BatchPlan:
    """What one batch is: the decisions, and the bytes a worker must move for them."""

    epoch: int
    index: int  # batch number within the epoch
    seq: int  # global write order (1, 2, ...) across epochs
    generation: int  # bumped when unfinished plans are abandoned
    requested: IntArray
    served: IntArray
    outcomes: npt.NDArray[np.int8]
    admitted: IntArray  # requested ids the policy admitted, in decision order
    evicted: IntArray  # ids evicted, in decision order
    deletes: IntArray  # net: ids to delete from the cache (applied first)
    puts: IntArray  # net: ids to put (all were read from storage by this batch)
    wait_for: int  # seq of the last earlier batch that put one of our cached ids
    weights: FloatArray
    #: bytes of some of our misses, read ahead by the main process (see readahead.py)
    staged: dict[int, bytes] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.requested)

    @property
    def misses(self) -> IntArray:
        """Requested ids read from storage (in order, duplicates kept)."""
        return self.requested[self.outcomes == Outcome.MISS]


@dataclass
class Feedback:
    tag: int  # the batch index the training loop held when it gave this feedback
    ids: IntArray
    losses: FloatArray
    slot: int = -1  # its position in the epoch's feedback log


@dataclass
class EpochLog:
    """Decisions of every planned access of the epoch, in order (for tests and replay)."""

    requested: list[int] = field(default_factory=list)
    outcomes: list[int] = field(default_factory=list)
    served: list[int] = field(default_factory=list)
    admitted: list[bool] = field(default_factory=list)
    evicted: list[tuple[int, ...]] = field(default_factory=list)

    def rows(self) -> list[tuple[int, int, int, bool, tuple[int, ...]]]:
        return list(
            zip(
                self.requested, self.outcomes, self.served, self.admitted, self.evicted, strict=True
            )
        )


class Planner:
    """Drives one System through epochs, one batch plan at a time, with feedback lag ``lag``."""

    def __init__(
        self, system: System, *, n: int, batch_size: int, lag: int, drop_last: bool = False
    ) -> None:
        self.system = system
        self.n = n
        self.batch_size = batch_size
        self.lag = lag
        self.drop_last = drop_last
        self.seq = 0  # seq of the last planned batch
        self.generation = 0
        self.epoch = -1
        self.order: IntArray = np.zeros(0, dtype=np.int64)
        self.n_batches = 0
        self.planned = 0  # batches planned in this epoch
        self.queue: list[Feedback] = []  # given, not yet applied
        self.feedback_log: list[Feedback] = []  # everything given this epoch, in arrival order
        self.applied_at: list[int] = []  # planned-count at which feedback_log[i] was applied
        self.loss_sum = 0.0
        self.loss_count = 0
        self.log = EpochLog()
        self._last_put_seq = np.zeros(n, dtype=np.int64)
        #: seq -> deletes of batches planned but not known to be written (for repair)
        self.unconfirmed: dict[int, IntArray] = {}

    # -- epochs -------------------------------------------------------------------
    def begin(self, epoch: int, *, rank: int, world_size: int) -> None:
        order = np.asarray(
            self.system.begin_epoch(epoch, rank=rank, world_size=world_size), dtype=np.int64
        )
        if order.ndim != 1 or (order.size and (order.min() < 0 or order.max() >= self.n)):
            raise HotsetError(f"system {self.system.name!r} planned ids outside 0..{self.n - 1}")
        self.epoch = epoch
        self.order = order
        full, rest = divmod(len(order), self.batch_size)
        self.n_batches = full + (1 if rest and not self.drop_last else 0)
        self.planned = 0
        self.queue = []
        self.feedback_log = []
        self.applied_at = []
        self.loss_sum = 0.0
        self.loss_count = 0
        self.log = EpochLog()

    def finish(self, *, val_accuracy: float | None) -> None:
        """Apply every queued feedback, then close the epoch (``system.end_epoch``)."""
        self._apply(until=None)
        train_loss = self.loss_sum / self.loss_count if self.loss_count else float("nan")
        self.system.end_epoch(train_loss=train_loss, val_accuracy=val_accuracy)

    # -- feedback -----------------------------------------------------------------
    def give(self, tag: int, ids: IntArray, losses: FloatArray) -> None:
        fb = Feedback(tag, ids, losses, slot=len(self.feedback_log))
        self.queue.append(fb)
        self.feedback_log.append(fb)
        self.applied_at.append(-1)

    def _apply(self, until: int | None) -> None:
        """Apply queued feedback tagged ``<= until`` (all when None), in tag then arrival order."""
        if not self.queue:
            return
        ready = [fb for fb in self.queue if until is None or fb.tag <= until]
        if not ready:
            return
        ready.sort(key=lambda fb: fb.tag)  # stable: arrival order within a tag
        self.queue = [fb for fb in self.queue if not (until is None or fb.tag <= until)]
        for fb in ready:
            self.system.feedback(fb.ids, fb.losses, epoch=self.epoch)
            self.loss_sum += float(fb.losses.sum())
            self.loss_count += len(fb.losses)
            self.applied_at[fb.slot] = self.planned

    # -- planning -----------------------------------------------------------------
    def plan_next(self) -> BatchPlan:
        """Plan batch ``self.planned`` of the epoch."""
        k = self.planned
        if k >= self.n_batches:
            raise HotsetError(f"epoch {self.epoch} has only {self.n_batches} batches")
        self._apply(until=k - self.lag - 1)
        ids = self.order[k * self.batch_size : (k + 1) * self.batch_size]
        self.seq += 1
        plan = self._decide(k, ids, self.seq)
        self.planned += 1
        self.unconfirmed[plan.seq] = plan.deletes
        return plan

    def _decide(self, k: int, ids: IntArray, seq: int) -> BatchPlan:
        system, log = self.system, self.log
        served = np.empty(len(ids), dtype=np.int64)
        outcomes = np.empty(len(ids), dtype=np.int8)
        admitted: list[int] = []
        evicted: list[int] = []
        last_op: dict[int, bool] = {}  # id -> True if its last op in the batch was an admission
        for j, sid in enumerate(ids.tolist()):
            d = system.access(sid)
            served[j] = d.served
            outcomes[j] = int(d.outcome)
            for e in d.evicted:
                evicted.append(e)
                last_op[e] = False
            if d.admitted:
                admitted.append(sid)
                last_op[sid] = True
            log.requested.append(sid)
            log.outcomes.append(int(d.outcome))
            log.served.append(int(d.served))
            log.admitted.append(bool(d.admitted))
            log.evicted.append(tuple(int(e) for e in d.evicted))
        deletes = np.asarray([i for i, put in last_op.items() if not put], dtype=np.int64)
        puts = np.asarray([i for i, put in last_op.items() if put], dtype=np.int64)
        cached = served[outcomes != Outcome.MISS]
        wait_for = int(self._last_put_seq[cached].max()) if len(cached) else 0
        if len(puts):
            self._last_put_seq[puts] = seq
        return BatchPlan(
            epoch=self.epoch,
            index=k,
            seq=seq,
            generation=self.generation,
            requested=ids.copy(),
            served=served,
            outcomes=outcomes,
            admitted=np.asarray(admitted, dtype=np.int64),
            evicted=np.asarray(evicted, dtype=np.int64),
            deletes=deletes,
            puts=puts,
            wait_for=wait_for,
            weights=np.asarray(system.weights(served), dtype=np.float64),
        )

    def plans(self) -> Iterator[BatchPlan]:
        """Plans for the rest of the epoch, made lazily as the consumer asks."""
        while self.planned < self.n_batches:
            yield self.plan_next()

    # -- repair and resumption -------------------------------------------------------
    def confirm(self, written_upto: int) -> None:
        """Forget the deletes of batches known to be written."""
        for seq in [s for s in self.unconfirmed if s <= written_upto]:
            del self.unconfirmed[seq]

    def replay(self, planned: int, feedback: list[Feedback], applied_at: list[int]) -> None:
        """Re-plan the first ``planned`` batches of the epoch with the feedback applied where it was.

        ``applied_at[i]`` is the planned-count at which ``feedback[i]`` was applied
        (-1: not yet). Feedback applied at or after ``planned`` goes back to the
        queue: the lag rule applies it again at the same point. Decisions are
        re-made for their effect on the policy; their cache writes never happen
        (the loader clears the cache and rebuilds lazily).
        """
        pending = sorted((at, i) for i, at in enumerate(applied_at) if 0 <= at < planned)
        self.feedback_log = []
        self.applied_at = []
        p = 0
        for k in range(planned):
            while p < len(pending) and pending[p][0] <= k:
                self._apply_now(feedback[pending[p][1]], at=k)
                p += 1
            ids = self.order[k * self.batch_size : (k + 1) * self.batch_size]
            self.seq += 1
            self._decide(k, ids, self.seq)
            self.planned += 1
        for i, at in enumerate(applied_at):
            if at < 0 or at >= planned:
                self.give(feedback[i].tag, feedback[i].ids, feedback[i].losses)

    def _apply_now(self, fb: Feedback, *, at: int) -> None:
        self.system.feedback(fb.ids, fb.losses, epoch=self.epoch)
        self.loss_sum += float(fb.losses.sum())
        self.loss_count += len(fb.losses)
        self.feedback_log.append(Feedback(fb.tag, fb.ids, fb.losses, slot=len(self.feedback_log)))
        self.applied_at.append(at)

    def feedback_state(self) -> dict[str, Any]:
        return {
            "tags": [fb.tag for fb in self.feedback_log],
            "ids": [fb.ids.copy() for fb in self.feedback_log],
            "losses": [fb.losses.copy() for fb in self.feedback_log],
            "applied_at": list(self.applied_at),
        }
