"""Scout's rounds: the sampler's set served chunk by chunk, a round of requests at a time.

Why (issue #43): Scout used to keep the sampler's order as drawn and fetch, at each
miss, the members of its chunk due within a lookahead window. In a uniform order a
chunk's members are spread over the whole epoch, so a window of ``W`` positions
brings about ``1 + C W / n`` of them, and with a small cache (``W`` is bounded by
it) that is one or two members a request: requests per sample near
``1 / (cache x chunk)``, where Quiver makes one request per chunk per epoch
(5% cache, chunks of 16, 10 ms store: 1,957 requests an epoch against Quiver's 314,
simulated). But the order of an importance sampler's epoch carries nothing the
sampler decided: IIS keeps a *set* of ids and reads it in a seeded permutation. So
this mode keeps the set exactly -- every id the sampler selected, as many times as
it selected it, none other -- and arranges it so that each chunk's members come
together, and a cache of any size reads each chunk once:

* **Pieces.** The selected ids of one chunk are one *piece*, read by ONE ranged
  request of the chunk's file (only those members' bytes). A chunk's selected
  members that do not fit the stock are cut into pieces that do (a small cache,
  large chunks), and into as many as put the most in a round (:func:`cuts_for`):
  a stock of under two chunks would otherwise hold one piece a round.
* **Rounds.** Pieces are dealt in a seeded order and packed into *rounds* of at
  most ``lanes`` pieces (the store's requests in flight) and the stock's bytes. A
  round begins with one member of each of its pieces, then the rest of its members
  shuffled together: its ``lanes`` requests all fall in one batch (one latency for
  the round, unless the round starts in a batch's last ``lanes - 1`` places), and the
  rest of the round is served from the cache. So a batch's requests come in whole
  rounds of ``lanes``, never a round of one or two that costs a latency for little
  (pieces of 14 to 16 members put 8 or 9 in a batch of 128 at random: 9 is 3
  latencies where 8 is 2).
* **Stock and static set** (sized from the cache, the chunk size and the store's
  parallelism, :class:`RoundPlan`). The stock is ``lanes`` chunks' bytes, the
  least that fills one round of requests, or the whole cache if smaller (then
  pieces are cut to it). What the cache holds beyond it is a *static set* of whole
  chunks, chosen by seed, read once and never evicted; their members are placed
  at seeded random positions of every epoch and served as exact hits. A larger
  cache thus reads fewer chunks per epoch, as Quiver's static set does.
* **Latency x bandwidth.** A piece is a whole chunk's selected members whenever
  the stock allows: one more member costs a request nothing but its bytes, so the
  unit of reading is as large as memory permits; the bytes read are the bytes
  trained (the ranged read), so a bandwidth-bound store pays only for what trains.

The arrangement is a pure function of (seed, epoch, the rank's selected ids, the
layout, the budget), computed when the sampler draws the order
(:meth:`ScoutRounds.arrange`), so a resumed epoch is arranged again exactly. The
decisions are the parent's (:class:`~hotset.policies.scout.Scout`): a miss reads
its chunk's members due before its round ends, nearest first, and every request
is served by the id requested -- no substitution, the order is the arranged one.
Static members are pinned: never evicted, read at the first miss of their chunk
with every member of it the epoch asks for.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from hotset.engine.arrays import IntArray
from hotset.engine.budget import Budget
from hotset.engine.outcome import Decision, Outcome
from hotset.engine.units import UnitLayout
from hotset.errors import HotsetError
from hotset.policies.scout.policy import Scout

#: the requests a round issues at once unless told: the store models' requests in flight
LANES = 4
_SALT = 4343


@dataclass(frozen=True)
class RoundPlan:
    """How Scout's rounds are sized for one layout and budget (module docstring)."""

    #: the most bytes (or items) one round holds: the stock
    stock: float
    #: the most pieces one round holds: the requests the store serves at once
    lanes: int
    #: chunks kept resident for good
    static: frozenset[int]
    #: per id, its weight in the budget's unit (bytes, or 1 for an item budget)
    weights: npt.NDArray[np.float64]

    @classmethod
    def size(cls, layout: UnitLayout, budget: Budget, *, lanes: int, seed: int) -> RoundPlan:
        """The stock is ``lanes`` of the largest chunks (a round of whole chunks), at most
        the cache; the rest of the cache is a seeded choice of whole static chunks."""
        chunk_of = np.asarray(layout.chunk_of, dtype=np.int64)
        n = len(chunk_of)
        by_bytes = budget.capacity_bytes is not None
        weights = np.asarray(
            [budget.size_of(i) for i in range(n)] if by_bytes else np.ones(n), dtype=np.float64
        )
        per_chunk = np.bincount(chunk_of, weights=weights)
        present = np.flatnonzero(per_chunk > 0)
        total = float(weights.sum())
        cap = budget.capacity_bytes if by_bytes else budget.capacity_items
        room = total if cap is None else min(float(cap), total)
        largest = float(per_chunk.max()) if len(present) else 0.0
        stock = min(room, lanes * largest)
        static: list[int] = []
        left = room - stock
        for c in np.random.default_rng([seed, _SALT]).permutation(present).tolist():
            if per_chunk[c] <= left:
                static.append(int(c))
                left -= per_chunk[c]
        return cls(stock=max(stock, 1.0), lanes=lanes, static=frozenset(static), weights=weights)


def arrange(
    ids: IntArray,
    *,
    chunk_of: IntArray,
    plan: RoundPlan,
    rng: np.random.Generator,
) -> tuple[IntArray, npt.NDArray[np.int64]]:
    """The ids, arranged in rounds (module docstring), and per position the end of its
    round (exclusive; -1 for a static member, read with its whole chunk).

    The same ids come out, each as many times as it came in.
    """
    ids = np.asarray(ids, dtype=np.int64)
    chunks = chunk_of[ids]
    static = np.isin(chunks, np.fromiter(plan.static, dtype=np.int64, count=len(plan.static)))
    stream, pinned = ids[~static], ids[static]
    pieces = _pieces(stream, chunk_of[stream], plan)
    rounds: list[list[IntArray]] = []
    load = math.inf
    for k in rng.permutation(len(pieces)).tolist():
        piece = pieces[k]
        weight = float(plan.weights[piece].sum())
        if load + weight > plan.stock or len(rounds[-1]) >= plan.lanes:
            rounds.append([])
            load = 0.0
        rounds[-1].append(piece)
        load += weight
    total = len(ids)
    is_static = np.zeros(total, dtype=bool)
    if len(pinned):  # static members at seeded random places of the epoch
        is_static[rng.choice(total, size=len(pinned), replace=False)] = True
    stream_pos = np.flatnonzero(~is_static)
    order = np.empty(total, dtype=np.int64)
    order[is_static] = pinned
    ends = np.full(total, -1, dtype=np.int64)
    at = 0
    for members in rounds:
        heads = rng.permutation([int(m[0]) for m in members])  # each piece's first member
        rest = rng.permutation(np.concatenate([m[1:] for m in members]))
        mixed = np.concatenate([heads, rest]).astype(np.int64)
        where = stream_pos[at : at + len(mixed)]
        order[where] = mixed
        ends[where] = int(where[-1]) + 1
        at += len(mixed)
    return order, ends


def _pieces(stream: IntArray, chunks: IntArray, plan: RoundPlan) -> list[IntArray]:
    """Each chunk's ids (in their given order), cut into pieces that fit the stock."""
    if not len(stream):
        return []
    by_chunk = np.argsort(chunks, kind="stable")
    cuts = np.flatnonzero(np.diff(chunks[by_chunk])) + 1
    out: list[IntArray] = []
    for part in np.split(stream[by_chunk], cuts):
        k = cuts_for(float(plan.weights[part].sum()), stock=plan.stock, lanes=plan.lanes)
        out += [p for p in np.array_split(part, k) if len(p)]
    return out


def cuts_for(weight: float, *, stock: float, lanes: int) -> int:
    """How many pieces a chunk's selected members of ``weight`` are cut into: the
    fewest that put the most in a round.

    A round pays one latency for what its pieces hold, so what a round holds decides
    an epoch's latencies. Pieces of ``weight / k`` fill a round with
    ``min(lanes, floor(stock k / weight))`` of them. Whole chunks are best whenever
    ``lanes`` of them fit the stock (a cache of ``lanes`` chunks or more: one request
    a chunk). But a stock of under two chunks holds one whole piece a round, a latency
    for one chunk's members; cut in two, three halves fit (issue #43: a 10% cache,
    chunks of 256).
    """
    if weight <= 0:
        return 1
    least = max(1, math.ceil(weight / stock - 1e-9))
    # past `most` pieces, lanes of them fit and each more cut only shrinks the round
    most = math.ceil(lanes * weight / stock - 1e-9)
    best, held = least, 0.0
    for k in range(least, most + 1):
        fits = min(lanes, math.floor(stock * k / weight + 1e-9))
        if fits * weight / k > held + 1e-9:
            best, held = k, fits * weight / k
    return best


class ScoutRounds(Scout):
    """Scout serving its sampler's set in rounds of chunk pieces (module docstring)."""

    name: ClassVar[str] = "scout"

    def __init__(self, budget: Budget, *, seed: int = 0, lanes: int = LANES) -> None:
        if isinstance(lanes, bool) or not isinstance(lanes, int) or lanes < 1:
            raise HotsetError(f"scout: lanes must be an integer >= 1, got {lanes!r}")
        super().__init__(budget, seed=seed, lookahead=0.0, stagger=False, preview=0, ramp=1.0)
        self.lanes = lanes
        self.plan: RoundPlan | None = None
        #: the last arranged order and its round ends (what begin_epoch is told next)
        self._arranged: tuple[IntArray, npt.NDArray[np.int64]] | None = None
        self._ends: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        #: static members held: never evicted
        self._pinned: set[int] = set()
        self.counts["static_reads"] = 0

    def attach_layout(self, layout: UnitLayout | None) -> None:
        super().attach_layout(layout)
        if layout is not None:
            self.plan = RoundPlan.size(layout, self.budget, lanes=self.lanes, seed=self.seed)

    def arrange(self, ids: IntArray, epoch: int) -> IntArray:
        """The sampler's ids for ``epoch`` in rounds (:func:`arrange`); remembered for
        :meth:`begin_epoch`. Without a layout they are returned as they are."""
        if self.plan is None or self.layout is None:
            return np.asarray(ids, dtype=np.int64)
        rng = np.random.default_rng([self.seed, int(epoch), _SALT])
        chunk_of = np.asarray(self.layout.chunk_of, dtype=np.int64)
        order, ends = arrange(ids, chunk_of=chunk_of, plan=self.plan, rng=rng)
        self._arranged = (order, ends)
        return order

    def begin_epoch(self, epoch: int, planned: IntArray | None = None) -> None:
        arranged = self._arranged
        if planned is not None and arranged is not None and np.array_equal(planned, arranged[0]):
            self._ends = arranged[1]
        else:  # not an order arranged here (a replayed trace): every window to its end
            self._ends = np.full(0 if planned is None else len(planned), -1, dtype=np.int64)
        super().begin_epoch(epoch, planned)

    def _static(self, c: int) -> bool:
        return self.plan is not None and c in self.plan.static

    def _release(self, sid: int) -> None:
        if sid not in self._pinned:
            super()._release(sid)

    def _window(self, p: int) -> int:
        """Up to the end of ``p``'s round (the whole epoch for a static member)."""
        end = int(self._ends[p]) if p < len(self._ends) else -1
        return (len(self._order) if end < 0 else end) - 1 - p

    def _fetch(self, sid: int, p: int) -> Decision:
        assert self.layout is not None
        c = int(self.layout.chunk_of[sid])
        if not self._static(c):
            return super()._fetch(sid, p)
        # a static chunk: read every member the epoch asks for, pin them all (sid too)
        due = [m for _, m in self._due_members(c, p) if m != sid]
        evicted: list[int] = []
        admitted = [m for m in (sid, *due) if self._make_room(self._size[m], p, evicted)]
        for m in admitted:
            self._admit(m)
            self._fresh.discard(m)
            self._pinned.add(m)
        self.counts["static_reads"] += 1
        others = tuple(m for m in admitted if m != sid)
        return Decision(
            sid,
            Outcome.MISS,
            sid,
            sid in admitted,
            tuple(evicted),
            also_admitted=others,
            group=c,
        )

    def _make_room(self, size: int, q: int, evicted: list[int]) -> bool:
        ok = super()._make_room(size, q, evicted)
        for e in evicted:
            self._pinned.discard(e)  # never a pinned one: they are not in the heaps
        return ok

    def summary(self) -> dict[str, Any]:
        plan = self.plan
        return {
            **super().summary(),
            "serve": "rounds",
            "lanes": self.lanes,
            "stock": None if plan is None else round(plan.stock),
            "static_chunks": None if plan is None else len(plan.static),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        counts = state.get("counts", {})
        static_reads = int(counts.get("static_reads", 0)) if isinstance(counts, Mapping) else 0
        super().load_state_dict(state)
        self.counts["static_reads"] = static_reads
        if self.layout is not None:  # the static members held: the resident ones
            chunk_of = self.layout.chunk_of
            self._pinned = {s for s in self._resident if self._static(int(chunk_of[s]))}


__all__ = ["LANES", "RoundPlan", "ScoutRounds", "arrange", "cuts_for"]
