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
for later batches (``Prefetches.prefetch``, asked after each batch's accesses); the
planner keeps them *staged* within ``budget.staging_bytes`` until the end of
the first batch that serves from them (``Outcome.PREFETCHED``), and checks
what a policy cannot be trusted to get right (:mod:`hotset.engine.staging`).
A unit may also be cached whole, under cache id ``n + unit``.

Batches of a plain cache
------------------------
A policy may decide a whole batch in one call (``access_batch``; see
:mod:`hotset.engine.decide`), equal by contract to calling ``access`` per id.

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

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.engine.ahead import AheadTracker
from hotset.engine.arrays import IntArray
from hotset.engine.counters import EpochCounts
from hotset.engine.decide import Decided, gather, gather_uniform
from hotset.engine.feedback import Feedback, FeedbackQueue
from hotset.engine.outcome import N_OUTCOMES, Outcome
from hotset.engine.plan import BatchPlan, EpochLog
from hotset.engine.roles import (
    Backgrounds,
    Evaluates,
    RoutesAroundLoss,
    SplitsByRank,
    missing_role,
)
from hotset.engine.staging import UnitStaging
from hotset.engine.system import System
from hotset.errors import HotsetError

FloatArray = npt.NDArray[np.float64]

_HIT, _SUB, _MISS, _PRE = (int(o) for o in Outcome)
_EMPTY = np.zeros(0, dtype=np.int64)


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
        caps = system.capabilities
        #: a policy that never caches has nothing to decide per access: one replay per batch
        self._uniform = not caps.caches
        #: the policy names units to prefetch after each batch (asked only then)
        self._prefetching = caps.prefetches
        #: the policy writes packages or loads units after each batch (asked only then)
        self._packing = caps.backgrounds
        #: the policy as what it is asked after each batch (None: it does not)
        self._backgrounds: Backgrounds | None = None
        if self._packing:
            if not isinstance(system.policy, Backgrounds):
                raise missing_role(system.policy, "Backgrounds", "packs or capabilities.loads")
            self._backgrounds = system.policy
        self.seq = 0  # seq of the last planned batch
        self.evaluated = 0  # ids re-evaluated before this epoch's draw
        self.generation = 0
        self.epoch = -1
        self.order: IntArray = np.zeros(0, dtype=np.int64)
        self.n_batches = 0
        self.planned = 0  # batches planned in this epoch
        self.feedback = FeedbackQueue(system)
        self.log = EpochLog()
        layout = system.policy.layout
        #: cache ids: samples 0..n-1, then read units cached whole (n + unit)
        self._last_put_seq = np.zeros(n + (0 if layout is None else layout.n_chunks), np.int64)
        self.staging = UnitStaging(system.policy, n=n, prefetching=caps.prefetches)
        #: ids read ahead and not used yet: names a HIT on them "fetched ahead"
        self.ahead = AheadTracker(n, self._unit_members)
        #: the ahead ids when the epoch began (a checkpoint's; replay goes on from them)
        self.ahead_at_start: IntArray = _EMPTY
        #: seq -> deletes of batches planned but not known to be written (for repair)
        self.unconfirmed: dict[int, IntArray] = {}

    def _unit_members(self, unit: int) -> IntArray:
        """A unit's ids in the policy's layout of now (iCACHE's packages change it)."""
        layout = self.system.policy.layout
        if layout is None:
            raise HotsetError(
                f"policy {self.system.policy.name!r} cached unit {unit} whole but has no layout"
            )
        return np.asarray(layout.members(unit), dtype=np.int64)

    # -- epochs -------------------------------------------------------------------
    def begin(
        self,
        epoch: int,
        *,
        rank: int = 0,
        world_size: int = 1,
        announce: bool = True,
        evaluate: Callable[[IntArray], FloatArray] | None = None,
    ) -> None:
        """Start ``epoch``: ask the system for its order (told to the policy if ``announce``).

        ``evaluate(ids) -> losses`` is a forward pass without a training step: a
        policy that ``evaluates`` names ids first, and their losses are fed back
        before the order is drawn (ImPACT's re-evaluation). Without it they keep
        their historical losses.
        """
        if evaluate is not None:
            self.evaluate(epoch, evaluate, rank=rank, world_size=world_size)
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
        self.feedback.reset()
        self.log = EpochLog()
        self.staging.reset()  # a prefetch lives within its epoch (policies drop theirs too)
        self.ahead_at_start = self.ahead.ids()

    def evaluate(
        self,
        epoch: int,
        evaluate: Callable[[IntArray], FloatArray],
        *,
        rank: int = 0,
        world_size: int = 1,
        share: Callable[[IntArray, FloatArray], Sequence[tuple[IntArray, FloatArray]]]
        | None = None,
    ) -> int:
        """Re-evaluate what the policy names before ``epoch``'s draw; how many ids.

        Separate from :meth:`begin` so that a driver can checkpoint between the two:
        the losses are then part of the state, and a resumed epoch draws the same order.
        The policy is told its rank first: under data parallelism it names only this
        rank's part (ImPACT's partitioned S). ``share(ids, losses)`` (data-parallel
        ranks, :func:`hotset.torch.ranks.gather_evaluated`) returns every rank's
        (ids, losses), rank 0's first, and all of them are fed back in that order, so
        that every rank's table holds every re-scored loss; it is called on every rank,
        with nothing to give too (it is a collective).
        """
        self.evaluated = 0
        if not self.system.capabilities.evaluates:
            return 0
        policy = self.system.policy
        if isinstance(policy, SplitsByRank):
            policy.bind_rank(rank, world_size)
        if not isinstance(policy, Evaluates):
            raise missing_role(policy, "Evaluates", "evaluates")
        ids = np.asarray(policy.to_evaluate(), dtype=np.int64)
        losses = np.zeros(0, dtype=np.float64)
        if len(ids):
            losses = np.asarray(evaluate(ids), dtype=np.float64)
            if losses.shape != ids.shape:
                raise HotsetError(f"evaluate: {len(ids)} ids got losses of shape {losses.shape}")
        parts = [(ids, losses)] if share is None else share(ids, losses)
        for part_ids, part_losses in parts:
            if len(part_ids):
                self.system.feedback(part_ids, part_losses, epoch=epoch)
        self.evaluated = len(ids)
        return self.evaluated

    def finish(
        self,
        *,
        val_accuracy: float | None,
        share: Callable[[list[Feedback], float | None], tuple[float, float | None]] | None = None,
    ) -> None:
        """Apply every queued feedback, then close the epoch (``system.end_epoch``).

        ``share`` (data-parallel ranks) gets the epoch's feedback log and this
        rank's accuracy once everything is applied, and returns the training loss
        and accuracy to close with (``hotset.torch.ranks`` merges every rank's).
        """
        self.feedback.apply(None, epoch=self.epoch, at=self.planned)
        train_loss = self.feedback.mean_loss
        if share is not None:
            train_loss, val_accuracy = share(self.feedback.log, val_accuracy)
        self.system.end_epoch(train_loss=train_loss, val_accuracy=val_accuracy)

    def give(self, tag: int, ids: IntArray, losses: FloatArray) -> None:
        """Per-sample losses given while the training loop held batch ``tag``."""
        self.feedback.give(tag, ids, losses)

    def cache_lost(self, ids: Sequence[int], unreachable: bool) -> None:
        """Tell the policy what a fetched batch failed to read from the cache (§4.8 of
        Quiver); it applies to the batches planned from here on.

        Reports are not part of the saved state and :meth:`replay` does not repeat
        them: a resume clears the cache and rebuilds it, so the losses they named are
        moot there.
        """
        policy = self.system.policy
        if (len(ids) or unreachable) and isinstance(policy, RoutesAroundLoss):
            policy.cache_lost(ids, unreachable=unreachable)

    # -- planning -----------------------------------------------------------------
    def plan_next(self) -> BatchPlan:
        """Plan batch ``self.planned`` of the epoch."""
        k = self.planned
        if k >= self.n_batches:
            raise HotsetError(f"epoch {self.epoch} has only {self.n_batches} batches")
        self.feedback.apply(k - self.lag - 1, epoch=self.epoch, at=k)
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
        policy = self.system.policy
        d = gather_uniform(policy, ids) if self._uniform else gather(policy, ids)
        ahead_hits = self.ahead.batch(d.outcomes, d.served, d.evictions, d.also)
        packs, pack_requests, pack_bytes = self._background(d) if self._packing else (_EMPTY, 0, 0)
        units, unit_reads = d.units, d.unit_reads
        outcomes, served = d.outcomes, d.served
        last_op = d.last_op
        deletes = np.array([i for i, put in last_op.items() if not put], dtype=np.int64)
        puts = np.array([i for i, put in last_op.items() if put], dtype=np.int64)
        unit_arr = np.array(list(unit_reads), dtype=np.int64)
        if self._prefetching or d.uses_units:
            prefetch = self.staging.stage(units, unit_reads, outcomes)
        else:
            prefetch = _EMPTY
        self.staging.check_puts(puts, d.reads, units, unit_reads)
        hit = outcomes <= _SUB
        cached = served[hit]
        if d.uses_units:  # a hit cut from a unit cached whole waits for that unit's put
            cut_from = units[hit]
            cached = np.where(cut_from >= 0, self.n + cut_from, cached)
        wait_for = int(self._last_put_seq[cached].max()) if len(cached) else 0
        if len(puts):
            self._last_put_seq[puts] = seq
        read_arr = np.array(list(d.reads), dtype=np.int64)
        requests, nbytes = self.staging.cost(self.sizes, read_arr, unit_arr, prefetch)
        groups = {
            u: np.fromiter(ids, dtype=np.int64, count=len(ids)) for u, ids in d.read_groups.items()
        }
        if groups:  # a partial unit read is one request for all the ids it brings
            self.staging.check_groups(groups)
            requests += len(groups) - sum(len(ids) for ids in groups.values())
        self.log.add(ids, outcomes, served, d.admitted_flags, d.evictions)
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
            admitted=np.array(d.admitted, dtype=np.int64),
            evicted=np.array(d.evicted, dtype=np.int64),
            deletes=deletes,
            puts=puts,
            wait_for=wait_for,
            weights=np.asarray(self.system.weights(served), dtype=np.float64),
            storage_requests=requests,
            storage_bytes=nbytes,
            packs=packs,
            pack_requests=pack_requests,
            pack_bytes=pack_bytes,
            read_groups=groups,
            ahead_hits=ahead_hits,
        )

    def _background(self, d: Decided) -> tuple[IntArray, int, int]:
        """Add a policy's background evictions and loads to the batch; (packs, their reads, bytes).

        The evictions come first; then a load reads one unit (a package, or a chunk
        of the data set's layout) in this batch's plan, or its samples alone
        (``unit == -1``), and admits its members after its own evictions, in
        decision order after every request of the batch.
        """
        policy = self.system.policy
        assert self._backgrounds is not None  # called only while packing (plan_next)
        bg = self._backgrounds.background()
        last_op = d.last_op
        for e in bg.evicted:
            d.evicted.append(e)
            last_op[e] = False
        self.ahead.drop(bg.evicted)
        for load in bg.loads:
            for e in load.evicted:
                d.evicted.append(e)
                last_op[e] = False
            for a in load.admitted:
                d.admitted.append(a)
                last_op[a] = True
            self.ahead.drop(load.evicted)
            self.ahead.add(load.admitted)  # loaded before anyone asked: fetched ahead
            if load.unit < 0:
                for a in load.admitted:
                    if a not in d.reads:
                        d.reads[a] = None
            else:
                d.unit_reads[int(load.unit)] = None
                d.uses_units = True
        if not bg.packs:
            return _EMPTY, 0, 0
        layout = policy.layout
        if layout is None:
            raise HotsetError(f"policy {policy.name!r} packed a package but has no package set")
        members = [layout.members(u) for u in bg.packs]
        pack_bytes = sum(int(self.sizes[m].sum()) for m in members)
        return np.asarray(bg.packs, dtype=np.int64), sum(len(m) for m in members), pack_bytes

    def replay_epoch(self) -> EpochCounts:
        """Plan the rest of the epoch at once, without feedback, and count it.

        The trace simulator's path. A policy that reads single samples and never
        prefetches is replayed in one :meth:`Policy.replay` call (equal, by the
        policy contract, to calling ``access`` in order), every miss one storage
        request; others are planned batch by batch. The decision log is not kept.
        """
        counts = EpochCounts()
        caps = self.system.capabilities
        if caps.reads_units or caps.prefetches or caps.backgrounds or self.feedback.queue:
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
        self.feedback.reset()
        p = 0
        for k in range(planned):
            while p < len(pending) and pending[p][0] <= k:
                self.feedback.apply_now(feedback[pending[p][1]], epoch=self.epoch, at=k)
                p += 1
            ids = self.order[k * self.batch_size : (k + 1) * self.batch_size]
            self.seq += 1
            self._decide(k, ids, self.seq)
            self.planned += 1
        for i, at in enumerate(applied_at):
            if at < 0 or at >= planned:
                self.give(feedback[i].tag, feedback[i].ids, feedback[i].losses)

    def feedback_state(self) -> dict[str, Any]:
        return self.feedback.state()
