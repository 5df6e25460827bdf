"""A batch's write turn: its evictions deleted and its admissions put, in plan order.

A batch waits for its turn (``seq - 1`` written, :mod:`hotset.torch.sequencer`),
deletes the plan's net evictions and cache entries found poisoned, puts its net
admissions plus the ids it rebuilt, and marks ``seq`` written -- whatever
happened, since every later batch waits on it.

Deletes a degraded batch skipped (:mod:`hotset.torch.cacheio`) are kept and
replayed at this process's next write that reaches the cache, so entries the
policy evicted do not linger and take its budget. A worker that exits first
(workers are started afresh each epoch) takes its list along, so skipped deletes
are also flagged in memory shared by every process of the loader: a put the
cache then refuses as over budget is put down to such leftovers, and the writer
-- holding the write turn, so no other writer of this loader interferes --
clears the cache and puts again (every id the policy holds becomes a rebuild
read).

Without the flag, whether a refused put is a policy bug depends on the cache.
The embedded shared-memory cache of one loader is private to it: nothing but
its own puts can fill it, so a refusal there is a policy bug and is raised (the
tests rely on it to catch one). A node's embedded cache is shared by the
job's local ranks (``shared``), each planning its share of the budget; a
rank's skipped deletes could crowd the others, so there, as on Redis, a
refusal is counted, not raised. A Redis namespace is not private either: other jobs share it,
another client may write to it, and a server whose ``maxmemory-policy`` evicts
drops entries behind the byte counter's back. The store resyncs its counter
before it refuses (:meth:`~hotset.cachestore.redis_store.RedisCache.resync`),
so a refusal there means the bytes really do not fit now; the batch then puts
what fits item by item and counts the rest (``refused_puts``/``refused_bytes``,
and ``cache_resyncs`` for the counter repairs), and training goes on: an id
whose put was refused is read again when next served (a rebuild read).
"""

from __future__ import annotations

import multiprocessing
from typing import Any

from hotset.cachestore.base import CacheKey, CacheStore, PutRefused
from hotset.cachestore.shm import SharedMemoryCache
from hotset.engine.plan import BatchPlan
from hotset.torch.cacheio import CacheBackoff, CacheKeys, CacheTurn
from hotset.torch.sequencer import Sequencer

__all__ = ["CacheWriter"]


class CacheWriter:
    """The write side of a loader's cache, shared by its processes (made in the main one)."""

    def __init__(
        self,
        cache: CacheStore | None,
        *,
        sequencer: Sequencer,
        backoff: CacheBackoff,
        keys: CacheKeys,
        shared: bool,
    ) -> None:
        self.cache = cache
        self.sequencer = sequencer
        self.backoff = backoff
        self.keys = keys
        #: other loaders write the cache: other jobs on a shared namespace, or the other
        #: ranks on a node's embedded cache (see _put)
        self.shared = shared
        #: the cache is private to this loader (the embedded one, not a node's): nothing
        #: outside it can fill its budget, so a put it refuses is a policy bug (see _put)
        self._private = isinstance(cache, SharedMemoryCache) and not shared
        #: [deletes skipped by a degraded batch, in any process, since the last clear]:
        #: made here, in the main process, so that workers inherit it
        self._skipped: Any = multiprocessing.RawArray("q", 1)

    def note_leftovers(self) -> None:
        """The cache may hold entries the policy does not (a clear that failed): a put
        refused over budget then clears it and puts again instead of failing."""
        self._skipped[0] += 1

    def write(
        self,
        plan: BatchPlan,
        blobs: dict[int, bytes],
        unit_raw: dict[int, bytes],
        rebuild: list[int],
        rebuild_units: list[int],
        poisoned: list[CacheKey],
        turn: CacheTurn,
    ) -> None:
        """Take ``plan``'s write turn: delete its evictions (and ``poisoned``), put its
        admissions and what it rebuilt, then mark it written."""
        cache = self.cache
        if cache is None:
            # Nothing is ever written, so no batch waits for another: taking turns would
            # only hold a finished worker until the one before it finished too.
            return
        deletes: list[int] = plan.deletes.tolist()
        items = self._items(plan, deletes, blobs, unit_raw, rebuild, rebuild_units)
        delete_keys = [self.keys.key_of(s) for s in deletes]
        if poisoned:  # dropped first, so that the rebuilt bytes can take their place
            delete_keys = list(dict.fromkeys([*poisoned, *delete_keys]))
        backoff = self.backoff
        with self.sequencer.writing(plan.seq, generation=plan.generation):
            # Inside the turn nothing may escape but a real error: the turn must be
            # marked written, or every later batch would wait on this one.
            if not (turn.ok and backoff.usable()):
                self._skip_deletes(delete_keys)
                return
            if backoff.pending_deletes:
                delete_keys = [*backoff.pending_deletes, *delete_keys]
            if delete_keys:
                if turn.call(cache.delete_many, delete_keys) is None:
                    # Unknown which landed: deleting again is harmless, so keep them all.
                    self._skip_deletes(delete_keys)
                    return
                backoff.pending_deletes.clear()
            if items:
                self._put(turn, cache, items)

    def _items(
        self,
        plan: BatchPlan,
        deletes: list[int],
        blobs: dict[int, bytes],
        unit_raw: dict[int, bytes],
        rebuild: list[int],
        rebuild_units: list[int],
    ) -> list[tuple[CacheKey, bytes]]:
        """What the batch puts: the plan's admissions it holds, then what it rebuilt
        (less what the plan deletes)."""
        n = self.keys.n
        hashes = self.keys.hashes
        key_of = self.keys.key_of
        items: list[tuple[CacheKey, bytes]] = []
        for cid in plan.puts.tolist():
            if cid < n:
                if cid in blobs:
                    items.append((CacheKey(cid, hashes[cid]), blobs[cid]))
            elif cid - n in unit_raw:  # a unit cached whole
                items.append((key_of(cid), unit_raw[cid - n]))
        if rebuild or rebuild_units:
            gone = set(deletes)
            items += [
                (CacheKey(s, hashes[s]), blobs[s]) for s in rebuild if s in blobs and s not in gone
            ]
            items += [
                (key_of(n + u), unit_raw[u])
                for u in rebuild_units
                if u in unit_raw and n + u not in gone
            ]
        return items

    def _put(self, turn: CacheTurn, cache: CacheStore, items: list[tuple[CacheKey, bytes]]) -> None:
        """Put a batch's items in its write turn; a put refused over budget never stops
        training where the cache may hold bytes this loader did not put (module docstring).

        The store has already resynced its byte counter before refusing (a Redis
        namespace: :meth:`~hotset.cachestore.redis_store.RedisCache.resync`), so a
        refusal means the bytes really do not fit. In a private namespace with
        skipped deletes on record, those leftovers hold the budget: the cache is
        cleared and the batch put again. What still does not fit is put item by
        item and the rest counted (``refused_puts``) -- except in a store private
        to this loader, where nothing else could have filled it: there a refusal
        is a policy bug and raised.
        """
        before = 0 if self._private else cache.stats().resyncs
        try:
            try:
                turn.call(cache.put_many, items)
                return
            except PutRefused as exc:
                refused = exc
            if not self.shared and self._skipped[0]:
                turn.errors += 1
                if turn.call(lambda _: cache.clear(), None) is None:
                    return
                self._skipped[0] = 0
                self.backoff.pending_deletes.clear()
                try:
                    turn.call(cache.put_many, items)
                    return
                except PutRefused as exc:
                    refused = exc
            if self._private:
                raise refused  # over budget with nothing outside to blame: a policy bug
            self._put_what_fits(turn, cache, items)
        finally:
            if not self._private:
                turn.resyncs += cache.stats().resyncs - before

    @staticmethod
    def _put_what_fits(
        turn: CacheTurn, cache: CacheStore, items: list[tuple[CacheKey, bytes]]
    ) -> None:
        """Over budget where others may hold bytes: each item alone; a refused one is counted.

        Costs a round trip per item, only in batches whose put was refused. An id
        whose put was refused is one the policy believes cached: it is read again
        (a rebuild read) when next served, and put again then.
        """
        for item in items:
            try:
                if turn.call(cache.put_many, [item]) is None:
                    return  # the backend failed: the rest would too
            except PutRefused:
                turn.refused += 1
                turn.refused_bytes += len(item[1])

    def _skip_deletes(self, keys: list[CacheKey]) -> None:
        """Remember deletes the cache did not take: replayed here, flagged for all."""
        if keys:
            self.backoff.pending_deletes.update(dict.fromkeys(keys))
            self._skipped[0] += len(keys)
