"""A shared namespace's pool: what other jobs (or ranks) put spares this job storage reads.

In a namespace shared with other jobs, a batch first asks the pool, in one
pipelined ``get_many``, for its planned single-sample misses and for what it
needs of each unit it plans to read (:meth:`SharedPool.lookup`): a miss found
there is not read, nor is a unit whose needed members are all there, so jobs
that load one data set's chunks in their own random orders read each chunk
about once between them (Quiver §5.2). A unit that only loads the cache and
that another job is reading right now is left to that job
(:meth:`SharedPool.claimed_elsewhere`, :mod:`hotset.coordination.claims`). Only
storage reads are saved: outcomes, puts and the counters of exact hits stay the
plan's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hotset.cachestore.base import CacheKey, CacheStore
from hotset.coordination.claims import claim, release
from hotset.engine.plan import BatchPlan
from hotset.engine.units import UnitLayout
from hotset.torch.cacheio import CacheKeys, CacheTurn
from hotset.torch.reads import StoreReader, xxh3_hex

__all__ = ["PoolFound", "SharedPool"]


@dataclass
class PoolFound:
    """What the pool spared one batch."""

    #: sample ids whose bytes came from the pool
    found: list[int] = field(default_factory=list)
    #: single-sample reads still to make
    missing: list[int] = field(default_factory=list)
    #: units not to read: the pool held what the batch needs of them
    units: list[int] = field(default_factory=list)
    #: bytes the pool served
    nbytes: int = 0


class SharedPool:
    """Lookups in a shared namespace, for a batch's planned reads (see the module)."""

    def __init__(
        self,
        cache: CacheStore | None,
        *,
        keys: CacheKeys,
        reader: StoreReader,
        layout: UnitLayout | None,
        verify: bool,
    ) -> None:
        self.cache = cache
        self.keys = keys
        self.reader = reader
        self.layout = layout
        self.verify = verify

    def lookup(
        self,
        plan: BatchPlan,
        sids: list[int],
        units: list[int],
        blobs: dict[int, bytes],
        unit_raw: dict[int, bytes],
        turn: CacheTurn,
    ) -> PoolFound:
        """What the pool spares storage of ``sids`` and ``units``, in one ``get_many``.

        The policy plans this job's cache, but other jobs (or ranks) on the namespace
        put entries it does not know of. A planned single-sample miss looks there
        first; so does a planned unit read (Quiver §5.2, co-operative miss handling:
        jobs load the same chunks in their own random orders, so most of a chunk one
        job wants another has often put already). A unit is not read when the pool
        holds every member the batch needs of it -- those it serves and those it
        puts -- or, for a unit the plan caches whole (cache id ``n + u``), the unit's
        own entry. Any member missing and the unit is read whole, as without a pool:
        one request brings all of them, so a partial answer saves nothing. An entry
        that does not hash to its key is ignored (read from storage).

        Found samples and units count as ``pool_hits``/``pool_unit_hits``, never as
        hits: the plan's outcomes stay. Bytes found go into ``blobs`` (and whole
        units into ``unit_raw``).
        """
        assert self.cache is not None
        wanted_by_unit = self._unit_needs(plan, units, blobs) if units else {}
        #: cache id -> its position in the one lookup (a member may also be a single)
        position: dict[int, int] = {s: i for i, s in enumerate(sids)}
        for cids in wanted_by_unit.values():
            for cid in cids:
                position.setdefault(cid, len(position))
        if not position:
            return PoolFound(missing=sids)
        keys = [self.keys.key_of(cid) for cid in position]
        got = turn.call(self.cache.get_many, keys)
        if got is None:
            return PoolFound(missing=sids)
        fine = self._checked(keys, got)
        out = PoolFound()
        found: dict[int, None] = {}
        for sid in sids:
            data = fine[position[sid]]
            if data is None:
                out.missing.append(sid)
            else:
                blobs[sid] = data
                found[sid] = None
                out.nbytes += len(data)
        for u, cids in wanted_by_unit.items():
            datas = [fine[position[cid]] for cid in cids]
            if self._take_unit(plan, u, cids, datas, blobs, unit_raw, found, out):
                out.units.append(u)
        out.found = list(found)
        return out

    def _checked(self, keys: list[CacheKey], got: list[bytes | None]) -> list[bytes | None]:
        """``got`` with each entry that does not hash to its key's hash (``verify``) dropped."""
        verify = self.verify
        return [
            data
            if data is not None and (not verify or xxh3_hex(data) == key.content_hash)
            else None
            for key, data in zip(keys, got, strict=True)
        ]

    def _take_unit(
        self,
        plan: BatchPlan,
        u: int,
        cids: list[int],
        datas: list[bytes | None],
        blobs: dict[int, bytes],
        unit_raw: dict[int, bytes],
        found: dict[int, None],
        out: PoolFound,
    ) -> bool:
        """Take what the pool holds of unit ``u``; False: it must be read from storage."""
        if not all(d is not None for d in datas):
            return False  # read from storage as without a pool
        n = self.keys.n
        cut = None
        if cids[0] >= n:  # the unit cached whole: cut it as a read would be
            assert datas[0] is not None
            cut = self.reader.split_cached(u, datas[0])
            if cut is None:
                return False  # a member the manifest disowns: read it from storage
        for cid, data in zip(cids, datas, strict=True):
            assert data is not None
            if cid >= n:
                assert cut is not None
                unit_raw[cid - n] = data
                for m in [m for m in self._served_members(plan, cid - n) if m not in found]:
                    found[m] = None
                blobs.update(cut)
                out.nbytes += len(data)
            elif cid not in found:
                blobs[cid] = data
                found[cid] = None
                out.nbytes += len(data)
        return True

    def claimed_elsewhere(
        self, plan: BatchPlan, units: list[int], turn: CacheTurn
    ) -> tuple[list[int], list[str]]:
        """Of ``units`` to read, those that only load the cache and another job is reading,
        and the claims this batch took (released once its put has landed: :meth:`release`).

        A unit some request of this batch is served from is always read (the batch
        needs its bytes now); so is one without a content hash to name it by
        (:mod:`hotset.coordination.claims`). A failing claim reads everything.
        """
        layout = self.layout
        if not units or layout is None:
            return [], []
        serving = set(plan.units[plan.units >= 0].tolist())
        hashes = layout.chunk_hashes
        loads = [u for u in units if u not in serving and u < len(hashes) and hashes[u]]
        if not loads:
            return [], []
        names = [hashes[u] for u in loads]
        mine = turn.call(lambda names: claim(self.cache, names), names)
        if mine is None:
            return [], []
        claims = [name for name, ok in zip(names, mine, strict=True) if ok]
        return [u for u, ok in zip(loads, mine, strict=True) if not ok], claims

    def release(self, claims: list[str], turn: CacheTurn) -> None:
        """The claimed units are in the pool now: let others find them."""
        turn.call(lambda names: release(self.cache, names), claims)

    def _served_members(self, plan: BatchPlan, unit: int) -> list[int]:
        """The ids this batch serves that ``unit`` holds."""
        assert self.layout is not None
        members = set(self.layout.members(unit).tolist())
        return [s for s in dict.fromkeys(plan.served.tolist()) if s in members]

    def _unit_needs(
        self, plan: BatchPlan, units: list[int], blobs: dict[int, bytes]
    ) -> dict[int, list[int]]:
        """Per unit to read, the cache ids a pool must hold for the read to be skipped.

        A unit the plan caches whole needs its own entry (``n + u``: the put takes
        the unit's bytes). Otherwise the members the batch serves or puts, less
        those it already holds (staged); a unit needing none of them is left to
        its read (its plan reads it for a reason this code does not second-guess).
        """
        assert self.layout is not None
        n = self.keys.n
        puts = set(plan.puts.tolist())
        wanted = puts | set(plan.served.tolist())
        out: dict[int, list[int]] = {}
        for u in units:
            if n + u in puts:
                out[u] = [n + u]
                continue
            cids = [m for m in self.layout.members(u).tolist() if m in wanted and m not in blobs]
            if cids:
                out[u] = cids
        return out
