"""The one planner: a System's decisions, turned into one :class:`BatchPlan` per batch.

Every policy and sampler call of every driver happens here, in one thread, in a
fixed order: the trace simulator, the live-training simulator and the loader
all drive this object, so "the loader makes the simulator's decisions" is true
by construction and the tests check the rest (feedback timing, workers).

Feedback lag, made deterministic
--------------------------------
A DataLoader plans ahead of training: with ``W`` workers and prefetch factor
``P`` it has asked for batch ``k + W*P`` by the time the training loop holds
batch ``k``. The planner therefore applies feedback with a fixed lag ``L``
(``W*P``; 0 in the simulators and without workers): feedback given while the
loop held batch ``b`` is *tagged* ``b`` and applied (``system.feedback``) just
before batch ``b + L + 1`` is planned, or at the end of the epoch.

Read units and prefetch
-----------------------
A decision may read a whole unit (``Decision.unit``; a chunk of the dataset's
layout) and admit any of its ids. A prefetching policy names units to read now
for later batches (``Policy.prefetch``, asked after each batch's accesses); the
planner keeps them *staged* within ``budget.staging_bytes`` until the end of
the first batch that serves from them (``Outcome.PREFETCHED``). The planner
checks what a policy cannot be trusted to get right -- a put whose bytes no
read of the batch brings, a prefetched unit that was never staged, staging
over budget -- and raises instead of planning a batch no worker could execute.

Cache writes
------------
For each batch the planner computes its net cache operations in decision
order: ids whose last operation in the batch was an eviction are ``deletes``;
ids whose last operation was an admission are ``puts``. Workers apply deletes
then puts, batch after batch in ``seq`` order, so the cache holds at most the
policy's resident set and never exceeds the budget. ``wait_for`` is the ``seq``
of the latest earlier batch that put one of this batch's cached ids: a worker
waits for that write before reading.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.engine.counters import EpochCounts
from hotset.engine.plan import BatchPlan, EpochLog
from hotset.errors import HotsetError
from hotset.policies.base import N_OUTCOMES, IntArray, Outcome
from hotset.systems.base import System

FloatArray = npt.NDArray[np.float64]

_HIT, _SUB, _MISS, _PRE = (int(o) for o in Outcome)
_EMPTY = np.zeros(0, dtype=np.int64)


@dataclass
class Feedback:
    tag: int  # the batch index the training loop held when it gave this feedback
    ids: IntArray
    losses: FloatArray
    slot: int = -1  # its position in the epoch's feedback log


class Planner:
    """Drives one System through epochs, one batch plan at a time, with feedback lag ``lag``."""

    def __init__(
        self,
        system: System,
        *,
        n: int,
        batch_size: int,
        lag: int,
        drop_last: bool = False,
        sizes: IntArray | None = None,
    ) -> None:
        self.system = system
        self.n = n
        self.batch_size = batch_size
        self.lag = lag
        self.drop_last = drop_last
        budget = system.policy.budget
        chosen = sizes if sizes is not None else budget.sizes
        #: bytes per sample id (ones when the budget counts items)
        self.sizes = (
            np.ones(n, dtype=np.int64) if chosen is None else np.asarray(chosen, dtype=np.int64)
        )
        self.staging_budget = int(budget.staging_bytes)
        caps = system.capabilities
        #: a policy that never caches has nothing to decide per access: one replay per batch
        self._uniform = not caps.caches
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
        #: prefetched units read and not yet served from: unit -> bytes
        self.staged_units: dict[int, int] = {}
        #: seq -> deletes of batches planned but not known to be written (for repair)
        self.unconfirmed: dict[int, IntArray] = {}

    # -- epochs -------------------------------------------------------------------
    def begin(
        self, epoch: int, *, rank: int = 0, world_size: int = 1, announce: bool = True
    ) -> None:
        """Start ``epoch``: ask the system for its order (told to the policy if ``announce``)."""
        order = np.asarray(
            self.system.begin_epoch(epoch, rank=rank, world_size=world_size, announce=announce),
            dtype=np.int64,
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
        self.staged_units = {}  # a prefetch lives within its epoch (policies drop theirs too)

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
        if len(plan.deletes):
            self.unconfirmed[plan.seq] = plan.deletes
        return plan

    def plans(self) -> Iterator[BatchPlan]:
        """Plans for the rest of the epoch, made lazily as the consumer asks."""
        while self.planned < self.n_batches:
            yield self.plan_next()

    def _decide(self, k: int, ids: IntArray, seq: int) -> BatchPlan:
        if self._uniform:
            return self._decide_uniform(k, ids, seq)
        system = self.system
        access = system.policy.access
        m = len(ids)
        served = np.empty(m, dtype=np.int64)
        outcomes = np.empty(m, dtype=np.int8)
        units = np.full(m, -1, dtype=np.int64)
        admitted_flags: list[bool] = [False] * m
        evictions: dict[int, tuple[int, ...]] = {}
        admitted: list[int] = []
        evicted: list[int] = []
        reads: dict[int, None] = {}
        unit_reads: dict[int, None] = {}
        last_op: dict[int, bool] = {}  # id -> True if its last op in the batch was an admission
        cached: list[int] = []
        for j, sid in enumerate(ids.tolist()):
            d = access(sid)
            s = d.served
            served[j] = s
            o = int(d.outcome)
            outcomes[j] = o
            if d.evicted:
                evictions[j] = d.evicted
                for e in d.evicted:
                    evicted.append(e)
                    last_op[e] = False
            if o == _MISS:
                if d.unit < 0:
                    reads[s] = None
                else:
                    unit_reads[d.unit] = None
            elif o == _PRE:
                if d.unit < 0:
                    raise HotsetError(
                        f"policy {system.policy.name!r}: id {sid} was served from a prefetch "
                        "without naming the unit that holds it"
                    )
            else:
                cached.append(s)
            if d.unit >= 0:
                units[j] = d.unit
            if d.admitted:
                admitted_flags[j] = True
                admitted.append(s)
                last_op[s] = True
            for a in d.also_admitted:
                admitted.append(a)
                last_op[a] = True
        deletes = np.asarray([i for i, put in last_op.items() if not put], dtype=np.int64)
        puts = np.asarray([i for i, put in last_op.items() if put], dtype=np.int64)
        unit_arr = np.asarray(list(unit_reads), dtype=np.int64)
        uses_units = self._prefetching or (len(unit_arr) > 0) or int(units.max(initial=-1)) >= 0
        prefetch = self._stage(units, unit_reads, outcomes) if uses_units else _EMPTY
        self._check_puts(puts, reads, units, unit_reads)
        wait_for = int(self._last_put_seq[cached].max()) if cached else 0
        if len(puts):
            self._last_put_seq[puts] = seq
        read_arr = np.asarray(list(reads), dtype=np.int64)
        requests, nbytes = self._storage_cost(read_arr, unit_arr, prefetch)
        self.log.add(ids, outcomes, served, admitted_flags, evictions)
        return BatchPlan(
            epoch=self.epoch,
            index=k,
            seq=seq,
            generation=self.generation,
            requested=ids.copy(),
            served=served,
            outcomes=outcomes,
            units=units,
            reads=read_arr,
            unit_reads=unit_arr,
            prefetch=prefetch,
            admitted=np.asarray(admitted, dtype=np.int64),
            evicted=np.asarray(evicted, dtype=np.int64),
            deletes=deletes,
            puts=puts,
            wait_for=wait_for,
            weights=np.asarray(system.weights(served), dtype=np.float64),
            storage_requests=requests,
            storage_bytes=nbytes,
        )

    def _decide_uniform(self, k: int, ids: IntArray, seq: int) -> BatchPlan:
        """A policy that caches nothing: every request is a read of its own sample."""
        outcomes = np.asarray(self.system.policy.replay(ids), dtype=np.int8)
        if not (outcomes == _MISS).all():
            raise HotsetError(
                f"policy {self.system.policy.name!r} declares it caches nothing "
                "but answered with a hit"
            )
        reads = np.asarray(list(dict.fromkeys(ids.tolist())), dtype=np.int64)
        self.log.add(ids, outcomes, ids)
        return BatchPlan(
            epoch=self.epoch,
            index=k,
            seq=seq,
            generation=self.generation,
            requested=ids.copy(),
            served=ids.copy(),
            outcomes=outcomes,
            units=np.full(len(ids), -1, dtype=np.int64),
            reads=reads,
            unit_reads=_EMPTY,
            prefetch=_EMPTY,
            admitted=_EMPTY,
            evicted=_EMPTY,
            deletes=_EMPTY,
            puts=_EMPTY,
            wait_for=0,
            weights=np.asarray(self.system.weights(ids), dtype=np.float64),
            storage_requests=len(reads),
            storage_bytes=int(self.sizes[reads].sum()),
        )

    def replay_epoch(self) -> EpochCounts:
        """Plan the rest of the epoch at once, without feedback, and count it.

        The trace simulator's path. A policy that reads single samples and never
        prefetches is replayed in one :meth:`Policy.replay` call (equal, by the
        policy contract, to calling ``access`` in order), every miss one storage
        request; others are planned batch by batch. The decision log is not kept.
        """
        counts = EpochCounts()
        caps = self.system.capabilities
        if caps.reads_units or caps.prefetches or self.queue:
            for plan in self.plans():
                counts.add_plan(plan)
            return counts
        ids = self.order[self.planned * self.batch_size : self.n_batches * self.batch_size]
        out = self.system.policy.replay(ids)
        counts.add_outcomes(np.bincount(out, minlength=N_OUTCOMES), requests=len(ids))
        missed = ids[out == _MISS]
        counts.storage_requests += len(missed)
        counts.storage_bytes += int(self.sizes[missed].sum())
        self.seq += self.n_batches - self.planned
        self.planned = self.n_batches
        return counts

    # -- units, prefetch and their checks ----------------------------------------------
    @property
    def _prefetching(self) -> bool:
        return self.system.capabilities.prefetches

    def _layout_sizes(self) -> IntArray:
        layout = self.system.policy.layout
        if layout is None:
            raise HotsetError(
                f"policy {self.system.policy.name!r} named a read unit, "
                "but the dataset has no chunk layout"
            )
        return np.asarray(layout.chunk_sizes, dtype=np.int64)

    def _stage(
        self, units: IntArray, unit_reads: dict[int, None], outcomes: npt.NDArray[np.int8]
    ) -> IntArray:
        """Check prefetched serves, release the units they consumed, stage new prefetches."""
        unit_sizes = self._layout_sizes()
        n_units = len(unit_sizes)
        used = units[units >= 0]
        if len(used) and int(used.max()) >= n_units:
            raise HotsetError(
                f"policy {self.system.policy.name!r} named unit {int(used.max())}; "
                f"the layout has {n_units} units"
            )
        consumed = set(units[(outcomes == _PRE)].tolist())
        missing = consumed - set(unit_reads) - set(self.staged_units)
        if missing:
            raise HotsetError(
                f"policy {self.system.policy.name!r} served from unit(s) {sorted(missing)} "
                "that were neither read by this batch nor prefetched"
            )
        for u in consumed:
            self.staged_units.pop(u, None)
        if not self._prefetching:
            return _EMPTY
        # exactly what the policy asked for: its own staging account must match ours
        fresh = [int(u) for u in self.system.policy.prefetch()]
        for u in fresh:
            if u in self.staged_units:
                raise HotsetError(
                    f"policy {self.system.policy.name!r} prefetched unit {u}, already staged"
                )
            if not 0 <= u < n_units:
                raise HotsetError(
                    f"policy {self.system.policy.name!r} prefetched unit {u}; "
                    f"the layout has {n_units} units"
                )
            self.staged_units[u] = int(unit_sizes[u])
        staged = sum(self.staged_units.values())
        if staged > self.staging_budget:
            raise HotsetError(
                f"policy {self.system.policy.name!r} staged {staged} bytes of prefetched units; "
                f"the staging budget is {self.staging_budget} bytes"
            )
        return np.asarray(fresh, dtype=np.int64)

    def _check_puts(
        self,
        puts: IntArray,
        reads: dict[int, None],
        units: IntArray,
        unit_reads: dict[int, None],
    ) -> None:
        """Every put must be bytes this batch holds: a sample read or a member of a unit used."""
        if not len(puts):
            return
        outside = set(puts.tolist()) - reads.keys()
        if not outside:
            return
        layout = self.system.policy.layout
        if layout is not None:
            for u in set(units[units >= 0].tolist()) | unit_reads.keys():
                outside -= set(layout.members(u).tolist())
        if outside:
            raise HotsetError(
                f"policy {self.system.policy.name!r} admitted id(s) {sorted(outside)[:5]} "
                "whose bytes no read of the batch brings"
            )

    def _storage_cost(
        self, reads: IntArray, unit_reads: IntArray, prefetch: IntArray
    ) -> tuple[int, int]:
        """(requests, bytes) this batch asks of the store: one request per sample or unit."""
        nbytes = int(self.sizes[reads].sum()) if len(reads) else 0
        if len(unit_reads) or len(prefetch):
            unit_sizes = self._layout_sizes()
            nbytes += int(unit_sizes[unit_reads].sum()) + int(unit_sizes[prefetch].sum())
        return len(reads) + len(unit_reads) + len(prefetch), nbytes

    # -- repair and resumption -------------------------------------------------------
    def confirm(self, written_upto: int) -> None:
        """Forget the deletes of batches known to be written."""
        if self.unconfirmed:
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
