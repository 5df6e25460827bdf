"""One batch's bytes, gathered in a worker: staged, pooled, cached, read -- then written.

:class:`BatchMove` is made per batch, in the process that fetches it, and never
pickled: it holds the batch's working state (the bytes gathered so far, what
must be rebuilt, what the cache failed to serve) and walks the steps of
:mod:`hotset.torch.fetch` in their fixed order. Whatever fails while gathering,
the batch still takes its write turn (:mod:`hotset.torch.cachewrite`), or every
later batch would wait on it; the error is raised after.

Every cache entry served is re-hashed here (``verify``) against the hash its key
carries, because a shared cache is written by more than this loader. Such an
entry is never delivered: it is read from storage as a rebuild read, deleted in
this batch's write turn and put back, and counted (``integrity_errors``).
"""

from __future__ import annotations

import time
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Protocol

import xxhash

from hotset.cachestore.base import CacheKey
from hotset.engine.outcome import Outcome
from hotset.engine.plan import BatchPlan
from hotset.torch.cacheio import CacheTurn

if TYPE_CHECKING:
    from hotset.cachestore.base import CacheStore
    from hotset.engine.units import UnitLayout
    from hotset.torch.cacheio import CacheBackoff, CacheKeys
    from hotset.torch.cachewrite import CacheWriter
    from hotset.torch.pool import SharedPool
    from hotset.torch.reads import StoreReader
    from hotset.torch.sequencer import Sequencer

__all__ = ["BatchMove", "MoveParts", "drop_poisoned"]

_SUB = int(Outcome.SUBSTITUTION)
#: a unit read in flight: (unit, its future)
_UnitRead = tuple[int, Future[bytes]]


def drop_poisoned(
    keys: list[CacheKey], got: list[bytes | None], poisoned: list[CacheKey]
) -> list[bytes | None]:
    """``got`` with every entry that does not hash to its key's hash made a miss.

    The misses become rebuild reads; ``poisoned`` collects their keys, deleted
    in the write turn before the rebuilt bytes are put back (a store skips a put
    whose key it already holds, so the bad bytes would otherwise stay).
    """
    hexdigest = xxhash.xxh3_64_hexdigest
    out = got
    for i, (key, data) in enumerate(zip(keys, got, strict=True)):
        if data is not None and hexdigest(data) != key.content_hash:
            if out is got:
                out = list(got)
            out[i] = None
            poisoned.append(key)
    return out


class MoveParts(Protocol):
    """What a :class:`BatchMove` uses of the worker's fetcher, and nothing more.

    :class:`hotset.torch.fetch.BatchFetcher` has these parts; declaring them here
    keeps the import one way (fetch imports movebytes, never the reverse), so a
    batch's moves can be read, and tested, without the fetcher's module.
    """

    reader: StoreReader
    writer: CacheWriter
    pool: SharedPool
    cache: CacheStore | None
    cache_keys: CacheKeys
    backoff: CacheBackoff
    sequencer: Sequencer
    layout: UnitLayout | None
    #: every read is checked against these sizes
    size_list: list[int]
    #: other loaders write the cache: misses look in the pool first
    shared: bool
    #: re-hash what the cache serves
    verify: bool


class BatchMove:
    """The bytes of one plan: gathered by :meth:`run`, with what it did (see the module)."""

    def __init__(self, fetcher: MoveParts, plan: BatchPlan) -> None:
        self.f = fetcher
        self.plan = plan
        self.reader = fetcher.reader
        self.reader.unit_members = plan.unit_members  # before any unit read is submitted
        self.singles: list[int] = plan.reads.tolist()
        self.blobs: dict[int, bytes] = {}
        self.to_read = self._unstaged()
        #: requests the partial unit reads made (one each; an object store one per run) and bytes
        self.group_requests = self.group_bytes = self.group_ids = 0
        self.unit_ids: list[int] = plan.unit_reads.tolist()
        # A shared namespace asks the pool first (see hotset.torch.pool): a unit whose
        # needed members other jobs already put is not read, so its read waits for the answer.
        self.pool_units = fetcher.shared and bool(self.unit_ids) and fetcher.cache is not None
        self.unit_reads: list[_UnitRead] = (
            [] if self.pool_units else [(u, self.reader.submit_unit(u)) for u in self.unit_ids]
        )
        #: whole units' bytes this batch holds: prefetched, cached, or read
        self.unit_raw: dict[int, bytes] = {}
        self.cached: list[int] = []
        self.cached_units: list[int] = []
        self.rebuild_ids: list[int] = []
        self.rebuild_units: list[int] = []
        #: cache entries that did not hash to their key: dropped in the write turn
        self.poisoned: list[CacheKey] = []
        self.degraded_ids: list[int] = []
        self.degraded_units: list[int] = []
        self.unit_bytes = self.rebuild_unit_bytes = self.degraded_unit_bytes = 0
        self.wait_s = 0.0
        self.turn = CacheTurn(
            fetcher.backoff, fetcher.cache is not None and fetcher.backoff.usable()
        )
        self.pooled: list[int] = []
        #: units not read because the pool held what the batch needs of them
        self.pooled_units: list[int] = []
        #: units not read because another job claimed their read (hotset.torch.pool)
        self.claimed_elsewhere: list[int] = []
        #: unit reads this batch claimed (released after the put)
        self.claims: list[str] = []
        self.pool_bytes = 0
        #: the keys the batch asked the cache for: its hits, then its cached units
        self.asked: list[CacheKey] = []
        #: ids whose bytes came from the cache or the pool, not storage: bytes that do not
        #: decode are read again from storage (hotset.torch.samples)
        self.from_cache: list[int] = []

    def _unstaged(self) -> list[int]:
        """The single reads read-ahead has not staged; the staged bytes taken."""
        staged = self.plan.staged
        if not staged:
            return self.singles
        to_read = []
        for s in self.singles:
            data = staged.get(s)
            if data is None:
                to_read.append(s)
            else:
                self.blobs[s] = data
        return to_read

    def run(self) -> tuple[dict[int, bytes], dict[str, Any]]:
        """Gather, take the write turn (error or not), then the bytes and the batch's info."""
        error: BaseException | None = None
        try:
            self._gather()
        except BaseException as exc:  # still take the write turn, or later batches would stall
            error = exc
        t = time.perf_counter()
        self.f.writer.write(
            self.plan,
            self.blobs,
            self.unit_raw,
            self.rebuild_ids,
            self.rebuild_units,
            self.poisoned,
            self.turn,
        )
        self.wait_s += time.perf_counter() - t
        if self.claims:  # the claimed units are in the pool now: let others find them
            self.f.pool.release(self.claims, self.turn)
        if error is not None:
            raise error
        return self.blobs, self.info()

    def _gather(self) -> None:
        plan, blobs = self.plan, self.blobs
        for u, prefetched in plan.staged_units.items():  # read from storage, in the main
            self._take_read_unit(u, prefetched)
        self.cached, self.cached_units = self._cached()
        self._ask_pool()
        groups = self._groups()
        reads = self.reader.start(self.to_read, blobs)
        grouped = self.reader.submit_groups(groups)
        got = self._get_cached()
        if got is None and self.f.cache is not None:
            self.degraded_ids, self.degraded_units = self.cached, self.cached_units  # it failed
        elif got is not None:
            self._take_cached(got)
        else:
            self.rebuild_ids, self.rebuild_units = self.cached, self.cached_units
        rebuild = self.reader.start(self.rebuild_ids, blobs)
        rebuilt = [(u, self.reader.submit_unit(u)) for u in self.rebuild_units]
        degraded = self.reader.start(self.degraded_ids, blobs)
        degraded_reads = [(u, self.reader.submit_unit(u)) for u in self.degraded_units]
        self.reader.collect(reads, blobs)
        self.reader.collect(grouped, blobs)
        self.unit_bytes = self._collect_units(self.unit_reads)
        self.reader.collect(rebuild, blobs)
        self.rebuild_unit_bytes = self._collect_units(rebuilt)
        self.reader.collect(degraded, blobs)
        self.degraded_unit_bytes = self._collect_units(degraded_reads)

    def _groups(self) -> dict[int, list[int]]:
        """The plan's partial unit reads, less what the pool or read-ahead brought; the ids
        they bring leave ``to_read`` (each group is one ranged request, not one per id)."""
        if not self.plan.read_groups:
            return {}
        todo = dict.fromkeys(self.to_read)
        groups: dict[int, list[int]] = {}
        for u, ids in self.plan.read_groups.items():
            mine = [s for s in ids.tolist() if s in todo]
            for s in mine:
                del todo[s]
            if mine:
                groups[u] = mine
        self.to_read = list(todo)
        sizes = self.f.size_list
        self.group_requests = self.reader.group_requests(groups)  # an object store: its GETs
        self.group_ids = sum(len(ids) for ids in groups.values())
        self.group_bytes = sum(sizes[s] for ids in groups.values() for s in ids)
        return groups

    def _ask_pool(self) -> None:
        """A shared namespace: take what the pool holds, leave claimed units, start unit reads."""
        f, plan, turn = self.f, self.plan, self.turn
        pool_units = self.pool_units
        if f.shared and (self.to_read or pool_units) and f.cache is not None and turn.ok:
            found = f.pool.lookup(
                plan,
                self.to_read,
                self.unit_ids if pool_units else [],
                self.blobs,
                self.unit_raw,
                turn,
            )
            self.pooled, self.to_read = found.found, found.missing
            self.pooled_units, self.pool_bytes = found.units, found.nbytes
            self.from_cache += found.found
            layout = f.layout
            if found.units and layout is not None:
                for u in found.units:
                    self.from_cache += [s for s in layout.members(u).tolist() if s in self.blobs]
        if pool_units:
            skip = set(self.pooled_units)
            if turn.ok:
                todo = [u for u in self.unit_ids if u not in skip]
                self.claimed_elsewhere, claims = f.pool.claimed_elsewhere(plan, todo, turn)
                if claims:
                    self.claims = claims
                skip.update(self.claimed_elsewhere)
            self.unit_reads = [
                (u, self.reader.submit_unit(u)) for u in self.unit_ids if u not in skip
            ]

    def _get_cached(self) -> list[bytes | None] | None:
        """The cache's answer for the batch's hits, once the batches that put them wrote;
        None when there is nothing to ask, or the cache is unusable or failed."""
        f, plan = self.f, self.plan
        if not ((self.cached or self.cached_units) and f.cache is not None and self.turn.ok):
            return None
        self.wait_s += f.sequencer.wait_until(
            plan.wait_for, generation=plan.generation, what=f"batch seq {plan.seq}"
        )
        key_of = f.cache_keys.key_of
        self.asked = [key_of(s) for s in self.cached]
        self.asked += [key_of(f.cache_keys.n + u) for u in self.cached_units]
        got: list[bytes | None] | None = self.turn.call(f.cache.get_many, self.asked)
        return got

    def _take_cached(self, got: list[bytes | None]) -> None:
        """Cached bytes into the batch; a miss or a poisoned entry becomes a rebuild read."""
        n = self.f.cache_keys.n
        if self.f.verify:
            got = drop_poisoned(self.asked, got, self.poisoned)
        for sid, data in zip(self.cached, got, strict=False):
            if data is None:
                self.rebuild_ids.append(sid)
            else:
                self.blobs[sid] = data
                self.from_cache.append(sid)
        for u, whole in zip(self.cached_units, got[len(self.cached) :], strict=True):
            parts = None if whole is None else self.reader.split_cached(u, whole)
            if whole is None or parts is None:
                self.rebuild_units.append(u)
                if whole is not None:  # a member the manifest disowns: poisoned
                    self.poisoned.append(self.f.cache_keys.key_of(n + u))
            else:
                self.unit_raw[u] = whole
                self.blobs.update(parts)
                self.from_cache += parts

    def _cached(self) -> tuple[list[int], list[int]]:
        """(sample ids, units) this batch serves from the cache, not from its own reads.

        A hit or substitution naming a unit is served from that unit, cached whole.
        """
        plan, blobs = self.plan, self.blobs
        is_cached = plan.outcomes <= _SUB
        if not is_cached.any():
            return [], []
        incoming = set(self.singles)
        if self.unit_ids:
            layout = self.f.layout
            assert layout is not None
            for u in self.unit_ids:
                incoming.update(layout.members(u).tolist())
        served = plan.served[is_cached].tolist()
        units = plan.units[is_cached]
        if int(units.max()) < 0:
            return [s for s in dict.fromkeys(served) if s not in incoming and s not in blobs], []
        held = set(self.unit_ids) | plan.staged_units.keys()
        cached: dict[int, None] = {}
        cached_units: dict[int, None] = {}
        for s, u in zip(served, units.tolist(), strict=True):
            if u >= 0:
                if u not in held:
                    cached_units[u] = None
            elif s not in incoming and s not in blobs:
                cached[s] = None
        return list(cached), list(cached_units)

    def _collect_units(self, reads: list[_UnitRead]) -> int:
        """Wait for whole-unit reads, cut them into samples; the bytes read."""
        nbytes = 0
        for u, fut in reads:
            whole = self.reader.unit_or_skip(u, fut)
            if whole is None:
                continue  # skip mode: its members are in reader.failed
            nbytes += len(whole)
            self._take_read_unit(u, whole)
        return nbytes

    def _take_read_unit(self, u: int, data: bytes) -> None:
        """Cut a unit read from storage into the batch, every member checked (see reads).

        A unit a member of which failed (skip mode) is not kept whole, so it is never
        cached whole; its good members are delivered (and put, where the plan puts
        members).
        """
        parts, whole = self.reader.split_read(u, data)
        self.blobs.update(parts)
        if whole:
            self.unit_raw[u] = data

    def info(self) -> dict[str, Any]:
        """What the batch did, for the loader's report (read-ahead's and prefetch's
        requests are counted by the loader). Packages made again from their members
        count those reads as storage requests and bytes (``packages_lost``, taken off by
        the loader for its package summary)."""
        sizes = self.f.size_list  # every read was checked against these
        lost = self.reader.take_package_counts()
        return {
            **lost,
            "storage_requests": len(self.to_read)
            + len(self.unit_reads)
            + self.group_requests
            + lost["package_member_reads"],
            "unit_reads": len(self.unit_reads),
            "pack_reads": self.plan.pack_requests,
            "pack_bytes": self.plan.pack_bytes,
            "storage_bytes": sum([sizes[s] for s in self.to_read])
            + self.unit_bytes
            + self.group_bytes
            + lost["package_member_bytes"],
            "staged_reads": len(self.singles) - len(self.to_read) - self.group_ids,
            "rebuild_reads": len(self.rebuild_ids) + len(self.rebuild_units),
            "rebuild_bytes": sum([sizes[s] for s in self.rebuild_ids]) + self.rebuild_unit_bytes,
            "degraded_reads": len(self.degraded_ids) + len(self.degraded_units),
            "degraded_bytes": sum([sizes[s] for s in self.degraded_ids]) + self.degraded_unit_bytes,
            "cache_errors": self.turn.errors,
            "refused_puts": self.turn.refused,
            "refused_bytes": self.turn.refused_bytes,
            "cache_resyncs": self.turn.resyncs,
            "pool_hits": len(self.pooled),
            "pool_bytes": self.pool_bytes,
            "pool_unit_hits": len(self.pooled_units),
            "claimed_units": len(self.claimed_elsewhere),
            "integrity_errors": len(self.poisoned),
            "cache_reads": len(self.cached)
            + len(self.cached_units)
            - len(self.rebuild_ids)
            - len(self.rebuild_units)
            - len(self.degraded_ids)
            - len(self.degraded_units),
            "wait_seconds": self.wait_s,
            "cached_ids": self.from_cache,  # taken off in the worker (hotset.torch.fetch)
            **self.losses(),
        }

    def losses(self) -> dict[str, Any]:
        """The sample ids the cache failed to return (gone, poisoned, or the cache
        failed), for the policy (``Policy.cache_lost``); whether the cache failed."""
        units = self.rebuild_units + self.degraded_units
        lost = self.rebuild_ids + self.degraded_ids
        if units and self.f.layout is not None:
            n = self.f.cache_keys.n
            for u in units:
                lost += [s for s in self.f.layout.members(u).tolist() if s < n]
        return {
            "lost_ids": lost,
            "cache_unreachable": bool(self.degraded_ids or self.degraded_units),
        }
