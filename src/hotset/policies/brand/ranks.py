"""Brand across ranks (arXiv 2505.16280 §3.4): owner ranks, remote requests, opportunistic prefetch.

Every rank holds the same abstract memory space, ``world_size`` times one node's:
abstract chunk ``g`` is owned by rank ``g % world_size`` (each node owns as many
as its memory holds, the paper's Figure 5). A request maps to its location
``(g, slot)`` as on one node. If the requester holds a file prefetched to that
location in its *remote abstract memory*, that file is returned. Otherwise the
owner answers from its memory by the single-node protocol (return what is at the
slot, or refill from a chunk by fill rate) -- a *remote request* when the owner
is another rank -- and then looks at the requester's next ``window`` accesses:
for each that maps to a location the owner also holds, it sends the file there
if the sender has one and the requester's slot for that location is vacant and
its remote memory (``remote_frac`` of a node's memory, 10% in the paper) has
room; the sent file counts as consumed at the sender.

How ranks agree without a coordinator: Brand's orders are seeded permutations,
known to every rank before the epoch ("straightforward to replicate them to all
nodes", §3.4). Each rank replays every rank's accesses in lockstep -- step ``b``
is batch ``b`` of rank 0, then of rank 1, ... -- so all ranks hold the same
state; a rank's own decisions are those of its own accesses. Physically a
rank does its own I/O, and owners are bookkeeping: a remote request whose owner
must refill is not sent to the owner; the requester reads that chunk from the
shared store itself (counted in ``remote_chunk_reads``), and the files fill the
owner's memory by being put in the job's shared cache namespace (content-addressed,
so it does not matter which rank wrote an entry); a remote hit is a get from it.
The job reads the same chunks as the paper's owners would -- the decisions are the
same -- but a rank reads chunks another rank owns, which the paper's per-node
disks do not allow.

Exactly-once holds as on one node: a prefetch moves a file to the location of an
access the requester will make, so every access still consumes one file of its
location. World size 1 is single-node Brand, decision for decision.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from hotset.engine.arrays import IntArray
from hotset.engine.budget import Budget
from hotset.engine.capabilities import Capabilities
from hotset.engine.outcome import Decision, Outcome
from hotset.errors import HotsetError
from hotset.policies.brand.policy import Brand

#: per-rank counters of its own requests, in state order. ``owned_chunk_reads`` and
#: ``remote_chunk_reads`` are the chunks this rank reads from storage for its own
#: requests (one per chunk per batch, as the engine reads them), split by whether
#: this rank owns the chunk's abstract chunk: a remote one is a chunk read the
#: paper's owner would make from its disk, made here by the requester from the
#: shared store (see the module docstring)
COUNTERS = (
    "remote_requests",
    "remote_hits",
    "prefetch_hits",
    "prefetched_files",
    "owned_chunk_reads",
    "remote_chunk_reads",
)


class BrandRanks(Brand):
    """Brand with owner ranks and opportunistic prefetch; see the module docstring."""

    name: ClassVar[str] = "brand"
    capabilities: ClassVar[Capabilities] = Capabilities(
        reads_units=True, substitutes=True, plans_world=True
    )

    def __init__(
        self,
        budget: Budget,
        *,
        seed: int = 0,
        batch_size: int = 128,
        window: int = 64,
        remote_frac: float = 0.1,
    ) -> None:
        super().__init__(budget, seed=seed)
        if isinstance(window, bool) or not isinstance(window, int) or window < 0:
            raise HotsetError(f"brand: window must be an integer >= 0, got {window!r}")
        if not (isinstance(remote_frac, int | float) and 0 <= remote_frac < 1):
            raise HotsetError(f"brand: remote_frac must be in [0, 1), got {remote_frac!r}")
        self.batch_size = batch_size
        self.window = window
        self.remote_frac = float(remote_frac)
        self.world_size, self.rank = 1, 0
        self._remote_cap = 0  # bytes of a node's remote memory
        self._owner_cap: int | None = None
        self._orders: list[list[int]] = [[]]
        self._done = [0]  # accesses replayed so far, per rank
        self._step, self._turn = 0, 0
        self._owner_used: list[int] = [0]
        self._remote: list[dict[tuple[int, int], int]] = [{}]  # per rank: location -> file
        self._remote_used: list[int] = [0]
        self.counts = dict.fromkeys(COUNTERS, 0)
        self.remote_memory_peak = 0
        self._read_batch, self._read_units = -1, set[int]()  # this batch's chunk reads

    # -- the world ----------------------------------------------------------------------
    def _setup(self, world: int) -> None:
        """The global abstract memory for ``world`` nodes (a remote memory set aside in
        each node's when there are several); every slot empty."""
        self.world_size = world
        cap = self.budget.capacity_bytes
        self._remote_cap = 0 if cap is None or world == 1 else int(self.remote_frac * cap)
        #: bytes of an owner's slots (None: no byte budget)
        self._owner_cap = None if cap is None else cap - self._remote_cap
        owned = self.node_chunks if world == 1 else int(self.node_chunks * (1 - self.remote_frac))
        self._map(world * max(1, owned))
        self._owner_used = [0] * world
        self._remote = [{} for _ in range(world)]
        self._remote_used = [0] * world

    def begin_world(self, epoch: int, orders: Sequence[IntArray], rank: int) -> None:
        """Every rank's order of the epoch (the same on every rank) and which one is ours."""
        if self.layout is None:
            raise HotsetError("brand needs the dataset's chunk layout (hotset data pack)")
        world = len(orders)
        if world != self.world_size:
            if self.epoch or any(f >= 0 for row in self._slots for f in row):
                raise HotsetError(
                    f"brand: the world changed from {self.world_size} to {world} ranks mid-run"
                )
            self._setup(world)
        self.rank = rank
        self._recount()
        self.begin_epoch(epoch, orders[rank])
        self._orders = [np.asarray(o, dtype=np.int64).tolist() for o in orders]
        self._done = [0] * world
        self._step, self._turn = 0, 0  # the lockstep cursor: (batch, rank) replayed next
        self._read_batch, self._read_units = -1, set()

    def begin_epoch(self, epoch: int, planned: Any = None) -> None:
        super().begin_epoch(epoch, planned)
        for files in self._remote:  # prefetched files of an epoch left unconsumed stay valid
            for f in files.values():
                self._filled[f] = True

    def end_epoch(self) -> None:
        """Replay the other ranks' accesses to the end: every rank ends in the same state."""
        if self.world_size == 1:
            return
        batch = max(1, self.batch_size)
        self._advance(max(-(-len(o) // batch) for o in self._orders), 0)

    # -- accesses -----------------------------------------------------------------------
    def access(self, sid: int) -> Decision:
        if self.world_size == 1:
            return self._serve(int(sid))  # one node: Brand §3.3 as it is
        me = self.rank
        self._advance(self._done[me] // max(1, self.batch_size), me)
        decision = self._request(me, int(sid))
        self._count_read(decision)
        self._done[me] += 1
        return decision

    def _count_read(self, decision: Decision) -> None:
        """Count a chunk our request reads, once per batch, by who owns its abstract chunk."""
        unit = decision.unit
        if decision.outcome != Outcome.MISS or unit < 0:
            return
        batch = self._done[self.rank] // max(1, self.batch_size)
        if batch != self._read_batch:
            self._read_batch, self._read_units = batch, set()
        if unit in self._read_units:
            return  # the engine reads a chunk two requests of one batch chose once
        self._read_units.add(unit)
        mine = self._group_of[unit] % self.world_size == self.rank
        self.counts["owned_chunk_reads" if mine else "remote_chunk_reads"] += 1

    def _advance(self, batch: int, rank: int) -> None:
        """Replay, in lockstep order, every other rank's batches before (``batch``, ``rank``).

        Lockstep order: batch 0 of rank 0, of rank 1, ..., then batch 1 of each. Our
        own batches are replayed by our own accesses, in the same order.
        """
        size = max(1, self.batch_size)
        while (self._step, self._turn) < (batch, rank):
            q = self._turn
            if q != self.rank:
                self._catch_up(q, min((self._step + 1) * size, len(self._orders[q])))
            self._turn += 1
            if self._turn == self.world_size:
                self._step, self._turn = self._step + 1, 0

    def _catch_up(self, q: int, upto: int) -> None:
        order = self._orders[q]
        while self._done[q] < upto:
            self._request(q, order[self._done[q]])
            self._done[q] += 1

    def _request(self, q: int, sid: int) -> Decision:
        """Rank ``q``'s request for ``sid``: its remote memory, else the owner's protocol."""
        g, s = self.location(sid)
        mine = q == self.rank
        f = self._remote[q].pop((g, s), -1)
        if f >= 0:
            self._charge_remote(q, -self.budget.size_of(f), -1)
            if mine:
                self.counts["prefetch_hits"] += 1
            outcome = Outcome.HIT if f == sid else Outcome.SUBSTITUTION
            return Decision(sid, outcome, f, evicted=(f,))
        owner = g % self.world_size
        if owner == q:
            return self._serve(sid)
        before = self.chunk_reads
        decision = self._serve(sid)
        if mine:
            self.counts["remote_requests"] += 1
            self.counts["remote_hits"] += int(self.chunk_reads == before)
        self._prefetch_for(q, owner)
        return decision

    def _prefetch_for(self, q: int, owner: int) -> None:
        """Send rank ``q`` files of its next ``window`` accesses that ``owner`` holds (§3.4)."""
        order = self._orders[q]
        start = self._done[q] + 1
        limit = self._remote_cap
        remote, seen = self._remote[q], set()
        for j in order[start : start + self.window]:
            g, s = self.location(j)
            if (g, s) in seen or g % self.world_size != owner:
                continue
            seen.add((g, s))
            f = self._slots[g][s]
            size = self.budget.size_of(f) if f >= 0 else 0
            if f < 0 or (g, s) in remote or self._remote_used[q] + size > limit:
                continue  # the check list: the sender has data, the requester's slot is vacant
            self._slots[g][s] = -1
            self._charge(g, -size, -1)
            remote[(g, s)] = f
            self._charge_remote(q, size, 1)
            if q == self.rank:
                self.counts["prefetched_files"] += 1
                self.remote_memory_peak = max(self.remote_memory_peak, self._remote_used[q])

    # -- budgets: each owner its own memory; ``used_bytes`` is this rank's node ----------
    def _fits(self, g: int, size: int) -> bool:
        if self.world_size == 1:
            return super()._fits(g, size)
        cap = self._owner_cap
        return cap is None or self._owner_used[g % self.world_size] + size <= cap

    def _charge(self, g: int, size: int, items: int) -> None:
        owner = g % self.world_size
        self._owner_used[owner] += size
        if owner == self.rank:
            super()._charge(g, size, items)

    def _charge_remote(self, q: int, size: int, items: int) -> None:
        """Account ``size`` bytes more (or less) in rank ``q``'s remote memory."""
        self._remote_used[q] += size
        if q == self.rank:
            super()._charge(-1, size, items)

    # -- residency and resumption -------------------------------------------------------
    def __contains__(self, sid: object) -> bool:
        return super().__contains__(sid) or any(sid in r.values() for r in self._remote)

    def resident(self) -> frozenset[int]:
        """Every file in the job's memory: all owners' slots and remote memories."""
        prefetched = {f for r in self._remote for f in r.values()}
        return super().resident() | prefetched

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state["world"] = {
            "size": self.world_size,
            "remote": [[[g, s, f] for (g, s), f in r.items()] for r in self._remote],
            "counts": [self.counts[k] for k in COUNTERS],
            "remote_peak": self.remote_memory_peak,
        }
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        world = state.get("world", {"size": 1, "remote": [[]], "counts": [0] * len(COUNTERS)})
        if int(world["size"]) != self.world_size:
            self._setup(int(world["size"]))
        super().load_state_dict(state)
        self._remote = [{(int(g), int(s)): int(f) for g, s, f in r} for r in world["remote"]]
        self._remote_used = [sum(self.budget.size_of(f) for f in r.values()) for r in self._remote]
        counts = [int(v) for v in world["counts"]]  # states before the chunk reads had 4
        counts += [0] * (len(COUNTERS) - len(counts))
        self.counts = dict(zip(COUNTERS, counts, strict=True))
        self.remote_memory_peak = int(world.get("remote_peak", 0))
        self._recount()

    def _recount(self) -> None:
        """Each owner's bytes, and this rank's own node (owned slots + remote memory)."""
        world, size_of = self.world_size, self.budget.size_of
        self._owner_used = [0] * world
        items = 0
        for g, row in enumerate(self._slots):
            for f in row:
                if f >= 0:
                    self._owner_used[g % world] += size_of(f)
                    items += g % world == self.rank
        self.used_bytes = self._owner_used[self.rank] + self._remote_used[self.rank]
        self.used_items = items + len(self._remote[self.rank])
