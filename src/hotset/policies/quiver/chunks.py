"""Quiver's logical chunks (FAST'20 §5.1): the digest cut into striped partitions.

Quiver caches a data set that does not fit two chunks at a time: while the jobs
consume chunk ``k`` from the cache, chunk ``k + 1`` is loaded (double
buffering). A chunk must be a random-looking slice of the data (a data set
sorted by length would otherwise put all short items in the first chunk), so it
is a *stripe*: the load units are cut into ``K`` contiguous partitions, each
partition into ``K`` stripe units, and chunk ``j`` stitches stripe unit ``j`` of
every partition.

A *load unit* is what one storage request brings: a chunk of the data set's
layout (``hotset data pack``, many samples per request) or, without a layout, a
single sample. ``K`` follows from the budget: two chunks must fit, so a chunk
holds at most half of it (the paper's "10% of the data set" is the case of a
20% cache); a budget holding the whole data set is one chunk, never evicted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.engine.budget import Budget
from hotset.engine.units import UnitLayout
from hotset.errors import HotsetError

IntArray = npt.NDArray[np.int64]
_SALT = 0x9017
#: the stream a job's fresh rounds are dealt from (with its seed and the round's number)
_FRESH = 0xF5E5
_GOLDEN = (5**0.5 - 1) / 2
#: the chunk of a load unit a fresh round has not dealt into one yet
UNDEALT = -1
#: the largest share of the data set one chunk holds (FAST'20 §5.3: 10%)
MAX_CHUNK_SHARE = 0.1


def stripe_of(n_units: int, k: int) -> IntArray:
    """Logical chunk of each load unit: one stripe unit of every partition of ``P`` units.

    Partition ``p`` (units ``p*P .. p*P + P - 1``) is cut into ``k`` contiguous
    stripe units; stripe unit ``j`` goes to chunk ``(j + p) mod k``. The rotation
    evens the chunks out when ``k`` does not divide ``P`` (stripe units of 2 and 3
    units would otherwise always land in the same chunks). A partition of fewer
    than ``k`` units cannot be cut into ``k`` stripe units; then each unit is its
    own stripe unit (chunk ``u mod k``).
    """
    if k < 1 or n_units < 1:
        raise HotsetError(f"striped chunks: need k >= 1 and units >= 1, got k={k}, {n_units}")
    part = math.ceil(n_units / k)
    u = np.arange(n_units, dtype=np.int64)
    if part < k:
        return u % k
    return ((u % part) * k // part + u // part) % k


class StripedChunks:
    """Load units, their members and bytes, the ``k`` striped chunks that cycle through
    the cache, and the static set that stays in it.

    A chunk holds at most :data:`MAX_CHUNK_SHARE` of the data set (the paper's
    10%). Where the budget holds more than two such chunks, the rest of it keeps
    whole stripes for good (the *static* set, never evicted): they are served by
    substitution like the chunks, but read once, not once per epoch, so a larger
    cache reads less where the paper's two chunks would read everything every
    epoch. Static ids belong to chunk index ``k`` (:attr:`static`).
    """

    def __init__(self, budget: Budget, layout: UnitLayout | None, n: int) -> None:
        sizes = (
            np.ones(n, dtype=np.int64)
            if budget.sizes is None
            else np.asarray(budget.sizes, dtype=np.int64)[:n]
        )
        if layout is None:
            self.members: list[list[int]] = [[i] for i in range(n)]
            #: the unit a sample is read in (-1: alone, its own load unit)
            self.unit_ids: list[int] = [-1] * n
            self.load_of: IntArray = np.arange(n, dtype=np.int64)
        else:
            self.members = [[int(i) for i in layout.members(c)] for c in range(layout.n_chunks)]
            self.unit_ids = list(range(layout.n_chunks))
            self.load_of = np.asarray(layout.chunk_of, dtype=np.int64)
        self.unit_bytes = [int(sizes[m].sum()) if m else 0 for m in self.members]
        self.unit_items = [len(m) for m in self.members]
        stripes, n_static = self._count(budget, sizes)
        #: chunks that cycle through the cache
        self.k = stripes - n_static
        stripe = stripe_of(len(self.members), stripes)
        #: each load unit's chunk; the static set's units have chunk ``k``
        self.chunk_of_unit = np.minimum(stripe, self.k)
        self.units_of: list[list[int]] = [[] for _ in range(self.k + 1)]
        for u, c in enumerate(self.chunk_of_unit.tolist()):
            self.units_of[c].append(u)
        self.static_units: list[int] = self.units_of.pop()
        self.static_bytes = sum(self.unit_bytes[u] for u in self.static_units)
        self.chunk_bytes: list[int] = []
        #: each sample id's chunk (the chunk of its load unit; ``k``: static)
        self.chunk_of_id: list[int] = []
        self._recount()

    @property
    def static(self) -> int:
        """The chunk index of the static set."""
        return self.k

    def _count(self, budget: Budget, sizes: IntArray) -> tuple[int, int]:
        """(stripes, how many of them are static): the fewest stripes of at most
        :data:`MAX_CHUNK_SHARE` each of which two, beside as many static ones as
        fit, fit the budget; ``(1, 0)`` when the whole data set fits.
        """
        total_b, total_i = int(sizes.sum()), len(sizes)
        if budget.fits(total_b, total_i):
            return 1, 0
        n_units = len(self.members)
        cap_b, cap_i = budget.capacity_bytes, budget.capacity_items
        by_bytes = cap_b is not None
        cap = cap_b if cap_b is not None else cap_i
        assert cap is not None
        per = total_b if by_bytes else total_i
        target = min(cap / 2, MAX_CHUNK_SHARE * per)
        k = max(3, math.ceil(per / max(target, 1)))
        while k < n_units:
            stripe = stripe_of(n_units, k)
            b = np.bincount(stripe, weights=self.unit_bytes, minlength=k)
            i = np.bincount(stripe, weights=self.unit_items, minlength=k)

            def fits(m: int, b: Any = b, i: Any = i, k: int = k) -> bool:
                """Whether the last ``m`` stripes kept and two of the others fit."""
                top = np.argsort(-(b if by_bytes else i)[: k - m])[:2]
                return budget.fits(
                    int(b[top].sum() + b[k - m :].sum()), int(i[top].sum() + i[k - m :].sum())
                )

            if fits(0):
                # what a stripe more in the static set adds never shrinks: bisect
                low, high = 0, k - 3
                while low < high:
                    mid = (low + high + 1) // 2
                    low, high = (mid, high) if fits(mid) else (low, mid - 1)
                return k, low
            k = max(k + 1, int(k * 1.2))
        return n_units, 0  # a unit a chunk: the policy loads what fits

    def assign(self, chunk: int, units: Sequence[int]) -> None:
        """Make cycling chunk ``chunk`` hold ``units`` (a fresh order's deal, see
        :class:`ChunkCycle`); only while it is not in the cache. Updated in place: an
        epoch's view reads ``chunk_of_id`` as it is now."""
        chunk_of_id = self.chunk_of_id
        for u in self.units_of[chunk]:  # its old units belong to no chunk until dealt again
            if self.chunk_of_unit[u] == chunk:
                self.chunk_of_unit[u] = UNDEALT
                for sid in self.members[u]:
                    chunk_of_id[sid] = UNDEALT
        self.units_of[chunk] = [int(u) for u in units]
        self.chunk_of_unit[self.units_of[chunk]] = chunk
        for u in self.units_of[chunk]:
            for sid in self.members[u]:
                chunk_of_id[sid] = chunk
        self.chunk_bytes[chunk] = sum(self.unit_bytes[u] for u in self.units_of[chunk])

    def deal(self, units: Sequence[int], parts: int, rng: np.random.Generator) -> list[list[int]]:
        """``units`` in ``parts`` chunks, stratified as the stripes are, drawn at random.

        The units, in their order, are cut into blocks of ``parts``; each block gives one
        unit to every chunk, to which chunk drawn afresh (a seeded permutation per
        block). So a chunk takes one unit of every stretch of the data set, as a stripe
        does -- on a data set packed in label order a chunk still holds every label,
        where a plain shuffle of the units gave chunks of a few labels -- while which
        chunk, and so when in an epoch, a unit comes is drawn anew each round."""
        ordered = sorted(int(u) for u in units)
        parts = max(1, min(parts, len(ordered)))
        dealt: list[list[int]] = [[] for _ in range(parts)]
        for start in range(0, len(ordered), parts):
            block = ordered[start : start + parts]
            slots = rng.permutation(parts)[: len(block)].tolist()
            for u, j in zip(block, slots, strict=True):
                dealt[j].append(u)
        order = rng.permutation(parts).tolist()  # the round's chunks in a drawn order
        return [dealt[j] for j in order if dealt[j]]

    def _recount(self) -> None:
        """Chunk bytes and each id's chunk, from ``units_of`` and ``chunk_of_unit``."""
        self.chunk_bytes = [sum(self.unit_bytes[u] for u in us) for us in self.units_of]
        self.chunk_of_id[:] = self.chunk_of_unit[self.load_of].tolist()  # in place: see assign

    def assignment(self) -> list[int]:
        """Each load unit's chunk (what a checkpoint keeps once chunks are dealt afresh)."""
        return [int(c) for c in self.chunk_of_unit.tolist()]

    def load_assignment(self, chunk_of_unit: Sequence[int]) -> None:
        """Set each load unit's chunk (from :meth:`assignment`), checked: the same units,
        the same static set, every other unit in a cycling chunk."""
        got = np.asarray(chunk_of_unit, dtype=np.int64)
        if got.shape != self.chunk_of_unit.shape:
            raise HotsetError(
                f"quiver state: {len(got)} load units' chunks for {len(self.chunk_of_unit)} units"
            )
        static = got == self.k
        if (
            not np.array_equal(static, self.chunk_of_unit == self.k)
            or (got < UNDEALT).any()
            or (got > self.k).any()
        ):
            raise HotsetError("quiver state: its chunks do not fit this data set and budget")
        self.chunk_of_unit = got
        for c in range(self.k):
            self.units_of[c] = np.flatnonzero(got == c).tolist()
        self._recount()

    def unit_of(self, sid: int) -> int:
        """The load unit holding ``sid``."""
        return int(self.load_of[sid])

    def read_unit(self, u: int) -> int:
        """The engine's unit id for load unit ``u`` (-1: a sample read alone)."""
        return self.unit_ids[u]


class ChunkCycle:
    """Which chunks are in the cache, oldest first (at most two), and what is left to load.

    The cycle visits chunks ``0, 1, ..., K-1, 0, ...`` whatever the job's seed, so
    the jobs of a shared cache want the same chunks at the same time; each loads
    a chunk's units in a seeded random order that starts, for each job, at its own
    place, so they read different units first and find the rest in the pool (§5.2).

    ``fresh`` (a job alone): the chunks' units are not the fixed stripes but dealt
    afresh, a *round* at a time. A round holds every cycling unit except those of the
    chunks in the cache when it is dealt -- they are served first whatever the order,
    at the start of the next epoch -- cut into chunks stratified as the stripes are,
    each unit's chunk drawn at random (:meth:`StripedChunks.deal`); each chunk the
    cycle starts takes the round's next part. A round is dealt when the last one is used up, which is when an epoch's
    last chunk is being consumed, so the next epoch's order is drawn anew: with fixed
    stripes each sample came at the same point of every epoch (consecutive epochs
    correlated at rho 0.96-1.00). Each unit is still read once an epoch.
    """

    def __init__(self, chunks: StripedChunks, *, seed: int, fresh: bool = False) -> None:
        self.chunks = chunks
        self.seed = int(seed)
        self.fresh = fresh
        self.chunks_in: list[int] = []
        #: load units of the newest chunk not read yet, in this job's order
        self.queue: list[int] = []
        #: units of the static set not read yet (read once, in the first epoch)
        self.static_queue: list[int] = self._ordered(chunks.static_units, step=-1)
        self.next_step = 0
        #: (fresh) the current round's chunks not started yet, and rounds dealt so far
        self.plan: list[list[int]] = []
        self.rounds = 0
        #: (fresh) units the cache held when the round was dealt, left out of it: if their
        #: chunk leaves the cache before an epoch serves them, they join the round
        self.outside: set[int] = set()

    def _ordered(self, units: list[int], *, step: int) -> list[int]:
        """``units`` in one seeded order for every job, from this job's own place in it:
        a seed's place is the fractional part of seed * golden ratio, which spreads any
        run of consecutive seeds (a sweep's) evenly around the circle. A job then reaches
        units another job loaded a while ago, rarely ones loaded just now.
        """
        order = np.random.default_rng([_SALT, step + 1]).permutation(len(units))
        start = int(((self.seed * _GOLDEN) % 1.0) * len(units))
        return [units[i] for i in np.roll(order, -start).tolist()]

    @property
    def front(self) -> int:
        """The oldest chunk in the cache (the one being consumed)."""
        return self.chunks_in[0]

    def start_next(self) -> None:
        """Begin loading the next chunk of the cycle (``fresh``: the round's next part)."""
        step = self.next_step
        self.next_step += 1
        chunk = step % self.chunks.k
        if self.fresh:
            if not self.plan:
                self._deal_round()
            self.chunks.assign(chunk, self.plan.pop(0))
        self.chunks_in.append(chunk)
        self.queue = self._ordered(self.chunks.units_of[chunk], step=step)

    def _deal_round(self) -> None:
        """The next round: every cycling unit but those of the chunks in the cache, cut
        into as many chunks as the stripes leave beside them, in a seeded order."""
        chunks = self.chunks
        held = {u for c in self.chunks_in for u in chunks.units_of[c]}
        cycling = np.flatnonzero(chunks.chunk_of_unit != chunks.static).tolist()
        pool = [u for u in cycling if u not in held]
        rng = np.random.default_rng([_FRESH, self.seed, self.rounds])
        self.rounds += 1
        parts = max(1, chunks.k - len(self.chunks_in))
        self.plan = chunks.deal(pool, parts, rng)
        self.outside = held

    def drop_front(self) -> list[int]:
        """Forget the oldest chunk; its member ids. (fresh) A chunk the round left out,
        leaving before an epoch served it from the cache, joins the round as one more
        chunk at a seeded place, so every unit is still read once an epoch."""
        chunk = self.chunks_in.pop(0)
        units = self.chunks.units_of[chunk]
        back = [u for u in units if u in self.outside]
        if back:
            self.outside.difference_update(back)
            rng = np.random.default_rng([_FRESH, self.seed, self.rounds, len(self.plan)])
            self.plan.insert(int(rng.integers(0, len(self.plan) + 1)), sorted(back))
        return [s for u in units for s in self.chunks.members[u]]

    def state(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "chunks_in": list(self.chunks_in),
            "queue": list(self.queue),
            "step": self.next_step,
        }
        if self.fresh:  # the deal so far: each unit's chunk, the round's rest, its number
            out["assignment"] = self.chunks.assignment()
            out["plan"] = [list(part) for part in self.plan]
            out["rounds"] = self.rounds
            out["outside"] = sorted(self.outside)
        return out

    def load_state(self, state: Mapping[str, Any]) -> None:
        for key in ("chunks_in", "queue", "step"):
            if key not in state:
                raise HotsetError(f"quiver state: the chunk cycle misses {key!r}")
        if self.fresh and "assignment" in state:  # absent: saved with the fixed stripes
            plan = [[int(u) for u in part] for part in state["plan"]]
            outside = {int(u) for u in state["outside"]}
            n_units = len(self.chunks.members)
            named = [u for part in plan for u in part] + sorted(outside)
            if any(not 0 <= u < n_units for u in named):
                raise HotsetError("quiver state: its chunk plan names units this data set lacks")
            self.chunks.load_assignment(state["assignment"])
            self.plan, self.outside = plan, outside
            self.rounds = int(state["rounds"])
        self.chunks_in = [int(c) for c in state["chunks_in"]]
        self.queue = [int(u) for u in state["queue"]]
        self.next_step = int(state["step"])
