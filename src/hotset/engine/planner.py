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

Batches of a plain cache
------------------------
A policy that serves every request with the id itself, alone (no
substitutions, no read units, no prefetch), may decide a batch in one call,
``access_batch(ids) -> (outcomes, admitted, evictions)``: ``ids`` a list of
ints, ``outcomes`` a ``bytearray`` of ``Outcome.HIT``/``Outcome.MISS`` values,
``admitted[j]`` whether request ``j``'s id was admitted, ``evictions`` the
non-empty ``evicted`` tuples by position. It must equal calling ``access`` on
each id in order (as :meth:`Policy.replay` must); the planner then makes the
same plan without a :class:`Decision` object per request. It is used only
where the class defining it also defines the ``access`` in effect: a subclass
that overrides ``access`` alone is decided access by access.

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

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.engine.counters import EpochCounts
from hotset.engine.plan import BatchPlan, EpochLog
from hotset.errors import HotsetError
from hotset.policies.base import N_OUTCOMES, IntArray, Outcome, Policy
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


#: per policy class: whether its access_batch decides as its access does
_BATCH_CLASSES: dict[type, bool] = {}


def _batch_access(policy: Policy) -> Callable[[list[int]], Any] | None:
    """``policy.access_batch`` if it stands for the ``access`` in effect, else None.

    Both must come from the same class: a subclass that overrides ``access``
    alone (or an instance given its own ``access``) is decided access by access.
    """
    cls = type(policy)
    ok = _BATCH_CLASSES.get(cls)
    if ok is None:
        owners = [
            next((c for c in cls.__mro__ if name in vars(c)), None)
            for name in ("access_batch", "access")
        ]
        ok = _BATCH_CLASSES[cls] = owners[0] is not None and owners[0] is owners[1]
    if not ok or "access" in vars(policy):
        return None
    fn: Callable[[list[int]], Any] = policy.access_batch  # type: ignore[attr-defined]
    return fn


@dataclass
class _Decided:
    """One batch's decisions, as :meth:`Planner._decide` assembles them into a plan."""

    outcomes: npt.NDArray[np.int8]
    served: IntArray
    units: IntArray  # per request (-1: the sample alone)
    admitted_flags: list[bool]  # per request: the served id was admitted
    evictions: dict[int, tuple[int, ...]] = field(default_factory=dict)  # position -> evicted
    admitted: list[int] = field(default_factory=list)  # every admission, in order
    evicted: list[int] = field(default_factory=list)  # every eviction, in order
    #: net cache operations, in decision order: id -> True if its last op was an admission
    last_op: dict[int, bool] = field(default_factory=dict)
    reads: dict[int, None] = field(default_factory=dict)  # ids read alone, in order
    unit_reads: dict[int, None] = field(default_factory=dict)  # units read, in order
    uses_units: bool = False


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
        #: the policy names units to prefetch after each batch (asked only then)
        self._prefetching = caps.prefetches
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
        layout = system.policy.layout
        #: cache ids: samples 0..n-1, then read units cached whole (n + unit)
        self._last_put_seq = np.zeros(n + (0 if layout is None else layout.n_chunks), np.int64)
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
        policy = self.system.policy
        id_list: list[int] = ids.tolist()
        batch_access = _batch_access(policy)
        if batch_access is not None:
            d = self._gather_batch(policy.name, batch_access, ids, id_list)
        else:
            d = self._gather(policy.name, policy.access, id_list)
        units, unit_reads = d.units, d.unit_reads
        outcomes, served = d.outcomes, d.served
        last_op = d.last_op
        deletes = np.array([i for i, put in last_op.items() if not put], dtype=np.int64)
        puts = np.array([i for i, put in last_op.items() if put], dtype=np.int64)
        unit_arr = np.array(list(unit_reads), dtype=np.int64)
        if self._prefetching or d.uses_units:
            prefetch = self._stage(units, unit_reads, outcomes)
        else:
            prefetch = _EMPTY
        self._check_puts(puts, d.reads, units, unit_reads)
        hit = outcomes <= _SUB
        cached = served[hit]
        if d.uses_units:  # a hit cut from a unit cached whole waits for that unit's put
            cut_from = units[hit]
            cached = np.where(cut_from >= 0, self.n + cut_from, cached)
        wait_for = int(self._last_put_seq[cached].max()) if len(cached) else 0
        if len(puts):
            self._last_put_seq[puts] = seq
        read_arr = np.array(list(d.reads), dtype=np.int64)
        requests, nbytes = self._storage_cost(read_arr, unit_arr, prefetch)
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
        )

    def _gather(self, policy: str, access: Any, id_list: list[int]) -> _Decided:
        """One ``access`` per request, in order, and what the batch's decisions add up to."""
        decisions = [access(sid) for sid in id_list]
        out_list = [d.outcome for d in decisions]
        served_list = [d.served for d in decisions]
        unit_list = [d.unit for d in decisions]
        got = _Decided(
            outcomes=np.array(out_list, dtype=np.int8),
            served=np.array(served_list, dtype=np.int64),
            units=np.array(unit_list, dtype=np.int64),
            admitted_flags=[d.admitted for d in decisions],
        )
        last_op, evictions, admitted, evicted = (
            got.last_op,
            got.evictions,
            got.admitted,
            got.evicted,
        )
        for j, d in enumerate(decisions):
            gone = d.evicted
            if gone:
                evictions[j] = gone
                evicted += gone
                for e in gone:
                    last_op[e] = False
            if d.admitted:
                admitted.append(d.served)
                last_op[d.served] = True
            if d.also_admitted:
                for a in d.also_admitted:
                    admitted.append(a)
                    last_op[a] = True
        got.uses_units = max(unit_list, default=-1) >= 0
        if not got.uses_units:
            pairs = zip(served_list, out_list, strict=True)
            got.reads = dict.fromkeys([s for s, o in pairs if o == _MISS])
            if _PRE in out_list:
                self._unitless_prefetch(policy, id_list[out_list.index(_PRE)])
            return got
        reads, unit_reads = got.reads, got.unit_reads
        for j, o in enumerate(out_list):
            if o == _MISS:
                if unit_list[j] < 0:
                    reads[served_list[j]] = None
                else:
                    unit_reads[unit_list[j]] = None
            elif o == _PRE and unit_list[j] < 0:
                self._unitless_prefetch(policy, id_list[j])
        return got

    def _gather_batch(
        self, policy: str, access_batch: Any, ids: IntArray, id_list: list[int]
    ) -> _Decided:
        """The batch's decisions from one ``access_batch`` call (see the module docstring)."""
        out, flags, evictions = access_batch(id_list)
        m = len(id_list)
        if len(out) != m or len(flags) != m or out.count(_SUB) or out.count(_PRE):
            raise HotsetError(
                f"policy {policy!r}: access_batch must answer each request with a hit or a "
                "miss of the id itself"
            )
        got = _Decided(
            outcomes=np.frombuffer(out, dtype=np.int8).copy(),
            served=ids.copy(),
            units=np.full(m, -1, dtype=np.int64),
            admitted_flags=flags,
            evictions=evictions,
            reads=dict.fromkeys([s for s, o in zip(id_list, out, strict=True) if o == _MISS]),
        )
        last_op, admitted, evicted = got.last_op, got.admitted, got.evicted
        for j, sid in enumerate(id_list):
            gone = evictions.get(j)
            if gone:
                evicted += gone
                for e in gone:
                    last_op[e] = False
            if flags[j]:
                admitted.append(sid)
                last_op[sid] = True
        return got

    def _unitless_prefetch(self, policy: str, sid: int) -> None:
        raise HotsetError(
            f"policy {policy!r}: id {sid} was served from a prefetch "
            "without naming the unit that holds it"
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
        """Every put must be bytes this batch holds: a sample read, a unit used, or a member."""
        if not len(puts):
            return
        outside = set(puts.tolist()) - reads.keys()
        if not outside:
            return
        layout = self.system.policy.layout
        if layout is not None:
            for u in set(units[units >= 0].tolist()) | unit_reads.keys():
                outside -= set(layout.members(u).tolist())
                outside.discard(self.n + u)  # the unit itself, cached whole
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
