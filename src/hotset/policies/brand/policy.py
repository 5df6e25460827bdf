"""Brand's single-node memory (arXiv 2505.16280 §3.2–3.3): chunk reads, return what is there.

Chunks are the dataset's chunk layout (``hotset data pack``): one chunk is one storage
request, fixed across epochs. The abstract memory has ``M = cache_bytes / mean_bytes``
slots, cut into abstract chunks of ``chunk_size`` slots (the layout's largest chunk);
``G = n_chunks / n_abstract`` consecutive chunks form a group mapped to one abstract
chunk. The mapping table is ``group_of`` (chunk -> group), ``layout.chunk_of`` (id ->
chunk), ``slot_of`` (id -> slot) and ``filled`` (id filled this epoch).

Access protocol: a request for id ``i`` looks at slot ``slot_of[i]`` of its group's
abstract chunk. A valid file there is returned (HIT if it is ``i``, else SUBSTITUTION)
and self-invalidates. Otherwise a chunk of the group is read (MISS, ``unit=chunk``),
chosen by fill rate (slots it can fill / its size; ties at random from the seeded rng;
files already filled this epoch are skipped): its file at the requested slot is served
and every other fillable file fills an empty slot while the byte budget allows, so a
valid file is never evicted. Chunk bytes read but neither served nor filled are
``wasted_bytes`` (the engine's counters have no field for them, so they live here),
out of ``chunk_bytes`` read in all. Both count each read decided; the engine reads a
chunk that two requests of one batch chose once.

Exactly-once: requests to slot ``s`` of group ``g`` each consume exactly one file of
``(g, s)``, and with a permutation sampler there are exactly as many requests to
``(g, s)`` as files, so an empty slot always has an unfilled candidate and every id is
delivered exactly once per epoch. Where the protocol cannot keep that promise -- the
sampler requests a slot whose files are all consumed (repeats, resumed partial
epochs) -- the requested id itself is read from its own chunk and nothing is filled;
such reads are counted in ``overdrawn``. At an epoch boundary files still valid (only
after a partial epoch) stay resident and count as unconsumed files of the new epoch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from hotset.engine.budget import Budget
from hotset.engine.capabilities import Capabilities
from hotset.engine.outcome import Decision, Outcome
from hotset.engine.policy import Policy
from hotset.engine.state_ids import state_ids
from hotset.engine.units import UnitLayout
from hotset.errors import HotsetError


class Brand(Policy):
    """Brand's abstract memory and access protocol; see the module docstring."""

    name: ClassVar[str] = "brand"
    capabilities: ClassVar[Capabilities] = Capabilities(reads_units=True, substitutes=True)

    def __init__(self, budget: Budget, *, seed: int = 0) -> None:
        super().__init__(budget, seed=seed)
        # a stream of its own: the sampler seeded with the same number must not
        # drive the tie-breaks (correlated draws would bias the delivered order)
        self.rng = np.random.default_rng([int(seed), 0xB4A4D])
        self.chunk_size = 0
        self.n_groups = 0
        self.group_size = 0
        self.node_chunks = 1
        self.wasted_bytes = 0
        self.chunk_bytes = 0  # bytes of every chunk read decided (the waste's denominator)
        self.chunk_reads = 0
        self.overdrawn = 0
        self._members: list[list[int]] = []
        self._group_chunks: list[list[int]] = []
        self._group_of: list[int] = []
        self._slot_of: list[int] = []
        self._filled: list[bool] = []
        self._slots: list[list[int]] = []

    # -- mapping table ----------------------------------------------------------------
    def attach_layout(self, layout: UnitLayout | None) -> None:
        """Build the mapping table: the chunks are the layout's, fixed for the run."""
        super().attach_layout(layout)
        if layout is None:
            return
        n = len(layout.chunk_of)
        self._members = [[int(i) for i in layout.members(c)] for c in range(layout.n_chunks)]
        self.chunk_size = max((len(m) for m in self._members), default=1) or 1
        sizes = [self.budget.size_of(i) for i in range(n)]
        mean = max(1.0, sum(sizes) / max(1, n))
        cap = self.budget.capacity_bytes
        slots = int(cap / mean) if cap is not None else n
        if self.budget.capacity_items is not None:
            slots = min(slots, self.budget.capacity_items)
        #: abstract chunks one node's memory holds
        self.node_chunks = max(1, slots // self.chunk_size)
        self._map(self.node_chunks)

    def _map(self, n_abstract: int) -> None:
        """Cut the chunks into groups, one per abstract chunk; every slot empty."""
        layout = self.layout
        assert layout is not None
        n = len(layout.chunk_of)
        n_abstract = min(max(1, n_abstract), max(1, layout.n_chunks))
        self.group_size = -(-layout.n_chunks // n_abstract)
        self._group_of = [c // self.group_size for c in range(layout.n_chunks)]
        self.n_groups = -(-layout.n_chunks // self.group_size) if layout.n_chunks else 0
        self._group_chunks = [[] for _ in range(self.n_groups)]
        for c, g in enumerate(self._group_of):
            self._group_chunks[g].append(c)
        self._slot_of = [0] * n
        for members in self._members:
            for s, i in enumerate(members):
                self._slot_of[i] = s
        self._filled = [False] * n
        self._slots = [[-1] * self.chunk_size for _ in range(self.n_groups)]
        self.used_bytes = self.used_items = 0

    def begin_epoch(self, epoch: int, planned: Any = None) -> None:
        """A new epoch: only the files still valid count as filled (see the docstring)."""
        super().begin_epoch(epoch, planned)
        self._filled = [False] * len(self._filled)
        for row in self._slots:
            for f in row:
                if f >= 0:
                    self._filled[f] = True

    # -- access protocol --------------------------------------------------------------
    def access(self, sid: int) -> Decision:
        return self._serve(int(sid))

    def location(self, sid: int) -> tuple[int, int]:
        """(group, slot): the abstract chunk and the slot a request for ``sid`` maps to."""
        layout = self.layout
        if layout is None:
            raise HotsetError("brand needs the dataset's chunk layout (hotset data pack)")
        return self._group_of[int(layout.chunk_of[sid])], self._slot_of[sid]

    def _fits(self, g: int, size: int) -> bool:
        """Whether one more file of ``size`` bytes fits the memory holding group ``g``."""
        return self.budget.fits(self.used_bytes + size, self.used_items + 1)

    def _charge(self, g: int, size: int, items: int) -> None:
        """Account ``size`` bytes and ``items`` files more (or less) in ``g``'s memory."""
        self.used_bytes += size
        self.used_items += items

    def _serve(self, sid: int) -> Decision:
        """§3.3 for one request: what is at its slot, or a refill by fill rate."""
        g, s = self.location(sid)
        layout = self.layout
        assert layout is not None
        c0 = int(layout.chunk_of[sid])
        row = self._slots[g]
        f = row[s]
        if f >= 0:  # return whatever is there, and self-invalidate it
            row[s] = -1
            self._charge(g, -self.budget.size_of(f), -1)
            outcome = Outcome.HIT if f == sid else Outcome.SUBSTITUTION
            return Decision(sid, outcome, f, evicted=(f,))
        chunk = self._choose(g, s)
        self.chunk_reads += 1
        self.chunk_bytes += int(layout.chunk_sizes[c0 if chunk < 0 else chunk])
        if chunk < 0:  # every file of (g, s) consumed: read the id itself, fill nothing
            self.overdrawn += 1
            self.wasted_bytes += int(layout.chunk_sizes[c0]) - self.budget.size_of(sid)
            return Decision(sid, Outcome.MISS, sid, unit=c0)
        members = self._members[chunk]
        served = members[s]
        self._filled[served] = True
        used = self.budget.size_of(served)
        admitted: list[int] = []
        for t, j in enumerate(members):
            if t == s or self._filled[j] or row[t] >= 0:
                continue
            size = self.budget.size_of(j)
            if not self._fits(g, size):
                continue  # stays unfilled: a later refill may bring it
            row[t] = j
            self._filled[j] = True
            self._charge(g, size, 1)
            used += size
            admitted.append(j)
        self.wasted_bytes += max(0, int(layout.chunk_sizes[chunk]) - used)
        return Decision(sid, Outcome.MISS, served, unit=chunk, also_admitted=tuple(admitted))

    def fill_rate(self, chunk: int, slot: int) -> float:
        """Slots ``chunk`` can fill in its abstract chunk now, over its size (§3.3)."""
        row = self._slots[self._group_of[chunk]]
        members = self._members[chunk]
        fillable = sum(
            1 for t, j in enumerate(members) if not self._filled[j] and (row[t] < 0 or t == slot)
        )
        return fillable / max(1, len(members))

    def _choose(self, g: int, s: int) -> int:
        """The group's chunk to read for slot ``s``: best fill rate, ties at random; -1: none."""
        candidates = [
            c
            for c in self._group_chunks[g]
            if len(self._members[c]) > s and not self._filled[self._members[c][s]]
        ]
        if not candidates:
            return -1
        rates = [self.fill_rate(c, s) for c in candidates]
        best = max(rates)
        ties = [c for c, r in zip(candidates, rates, strict=True) if r == best]
        return ties[int(self.rng.integers(len(ties)))] if len(ties) > 1 else ties[0]

    # -- residency and resumption -----------------------------------------------------
    def __contains__(self, sid: object) -> bool:
        return isinstance(sid, int | np.integer) and any(int(sid) in row for row in self._slots)

    def resident(self) -> frozenset[int]:
        return frozenset(f for row in self._slots for f in row if f >= 0)

    def state_dict(self) -> dict[str, Any]:
        return {
            "policy": self.name,
            "epoch": self.epoch,
            "filled": [i for i, b in enumerate(self._filled) if b],
            "slots": [list(row) for row in self._slots],
            "rng": self.rng.bit_generator.state,
            "counters": [self.wasted_bytes, self.chunk_reads, self.overdrawn, self.chunk_bytes],
        }

    def _checked_slots(self, saved: Any, n: int) -> list[list[int]]:
        """The saved slots: as many groups as this layout has, each a list of sample ids
        or -1 (empty), every id in range; anything else names the group."""
        if not isinstance(saved, list | tuple | np.ndarray) or len(saved) != len(self._slots):
            got = len(saved) if isinstance(saved, list | tuple | np.ndarray) else saved
            raise HotsetError(
                f"brand state: slots must hold {len(self._slots)} groups, got {got!r:.60}"
            )
        out = []
        for g, row in enumerate(saved):
            arr = np.asarray(row) if isinstance(row, list | tuple | np.ndarray) else None
            ok = arr is not None and arr.ndim == 1 and (not arr.size or arr.dtype.kind in "iu")
            if not ok or (arr is not None and arr.size and not -1 <= arr.min() <= arr.max() < n):
                raise HotsetError(
                    f"brand state: slots[{g}] must list sample ids in 0..{n - 1} or -1, "
                    f"got {row!r:.60}"
                )
            out.append([int(f) for f in row])
        return out

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        if state.get("policy") != self.name:
            raise HotsetError(f"state is for {state.get('policy')!r}, not {self.name!r}")
        n = len(self._filled)
        filled = state_ids(state["filled"], n, "brand state: filled")  # -1 wrapped before
        slots = self._checked_slots(state["slots"], n)
        self.epoch = int(state["epoch"])
        self._filled = [False] * n
        for i in filled.tolist():
            self._filled[i] = True
        self._slots = slots
        self.rng.bit_generator.state = state["rng"]
        counters = [int(v) for v in state["counters"]] + [0]  # states before chunk_bytes had 3
        self.wasted_bytes, self.chunk_reads, self.overdrawn, self.chunk_bytes = counters[:4]
        live = [f for row in self._slots for f in row if f >= 0]
        self.used_bytes = sum(self.budget.size_of(f) for f in live)
        self.used_items = len(live)
