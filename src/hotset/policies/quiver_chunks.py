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
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.engine.units import UnitLayout
from hotset.errors import HotsetError
from hotset.policies.base import Budget

IntArray = npt.NDArray[np.int64]
_SALT = 0x9017
_GOLDEN = (5**0.5 - 1) / 2


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
    """Load units, their members and bytes, and the ``K`` striped chunks over them."""

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
        self.k = self._count(budget, sizes)
        self.chunk_of_unit = stripe_of(len(self.members), self.k)
        self.units_of: list[list[int]] = [[] for _ in range(self.k)]
        for u, c in enumerate(self.chunk_of_unit.tolist()):
            self.units_of[c].append(u)
        self.chunk_bytes = [sum(self.unit_bytes[u] for u in us) for us in self.units_of]
        #: each sample id's chunk (the chunk of its load unit)
        self.chunk_of_id: list[int] = self.chunk_of_unit[self.load_of].tolist()

    def _count(self, budget: Budget, sizes: IntArray) -> int:
        """The fewest chunks of which any two fit the budget (1: the whole data set fits)."""
        total_b, total_i = int(sizes.sum()), len(sizes)
        if budget.fits(total_b, total_i):
            return 1
        n_units = len(self.members)
        cap_b = budget.capacity_bytes
        cap_i = budget.capacity_items
        half = min(
            math.inf if cap_b is None else cap_b / 2, math.inf if cap_i is None else cap_i / 2
        )
        per = total_b if cap_b is not None else total_i
        k = max(2, math.ceil(per / max(half, 1)))
        while k < n_units:
            chunks = stripe_of(n_units, k)
            b = np.bincount(chunks, weights=self.unit_bytes, minlength=k)
            i = np.bincount(chunks, weights=self.unit_items, minlength=k)
            top = np.argsort(-b if cap_b is not None else -i)[:2]
            if budget.fits(int(b[top].sum()), int(i[top].sum())):
                return k
            k = max(k + 1, int(k * 1.2))
        return n_units  # a unit a chunk: the policy loads what fits

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
    """

    def __init__(self, chunks: StripedChunks, *, seed: int) -> None:
        self.chunks = chunks
        self.seed = int(seed)
        self.chunks_in: list[int] = []
        #: load units of the newest chunk not read yet, in this job's order
        self.queue: list[int] = []
        self.next_step = 0

    @property
    def front(self) -> int:
        """The oldest chunk in the cache (the one being consumed)."""
        return self.chunks_in[0]

    def start_next(self) -> None:
        """Begin loading the next chunk of the cycle."""
        step = self.next_step
        self.next_step += 1
        chunk = step % self.chunks.k
        units = self.chunks.units_of[chunk]
        # One permutation per step for every job, each job starting at its own place in
        # it: a seed's place is the fractional part of seed * golden ratio, which spreads
        # any run of consecutive seeds (a sweep's) evenly around the circle. A job then
        # reaches units another job loaded a while ago, rarely ones loaded just now.
        order = np.random.default_rng([_SALT, step]).permutation(len(units))
        start = int(((self.seed * _GOLDEN) % 1.0) * len(units))
        self.chunks_in.append(chunk)
        self.queue = [units[i] for i in np.roll(order, -start).tolist()]

    def drop_front(self) -> list[int]:
        """Forget the oldest chunk; its member ids."""
        chunk = self.chunks_in.pop(0)
        return [s for u in self.chunks.units_of[chunk] for s in self.chunks.members[u]]

    def state(self) -> dict[str, Any]:
        return {
            "chunks_in": list(self.chunks_in),
            "queue": list(self.queue),
            "step": self.next_step,
        }

    def load_state(self, state: Mapping[str, Any]) -> None:
        for key in ("chunks_in", "queue", "step"):
            if key not in state:
                raise HotsetError(f"quiver state: the chunk cycle misses {key!r}")
        self.chunks_in = [int(c) for c in state["chunks_in"]]
        self.queue = [int(u) for u in state["queue"]]
        self.next_step = int(state["step"])
