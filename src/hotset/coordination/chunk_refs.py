"""Coordinated eviction of a shared cache (Quiver FAST'20 §5.1): ref, unref, evict.

Several jobs consume the same chunks of one shared namespace at their own pace.
A job done with a chunk plans its eviction, but another job may still be in its
pass over that chunk: deleting the entries at once would turn that job's hits
into storage reads. So a chunk is *marked* when a job releases it and *evicted*
when every job that used it has released it, or, so that one slow job cannot
hold the next chunk's load back for long, once ``force_after_s`` have passed
since the first release. What another client writes there (a job set of fake
holders, a first-release time that is no number or lies ahead, keys of another
type) changes at most when a chunk's entries are deleted -- never later than
``2 * force_after_s`` after this job released it (checked at its next write), and
never before it did -- and never fails a put or a release.

:class:`ChunkRefs` wraps the namespace's :class:`~hotset.cachestore.redis_store.RedisCache`
(or its content-addressed subclass) for one job: a put of a chunk's members
refs the chunk for the job (``SADD``), and a delete of them unrefs it; the
entries are deleted only by the release that leaves no job holding the chunk,
or by one past the forced-eviction time. One Lua script per chunk does the
unref and the decision atomically, so two jobs releasing at once cannot both
keep the entries. A server that fails here fails as the store does
(:class:`~hotset.cachestore.redis_store.CacheUnavailable`), so the loader
degrades to storage the same way. A job that ends releases the chunks it still holds
(:meth:`ChunkRefs.leave`). A deferred delete leaves the entries in the namespace's
budget: this job's next puts may then be refused (counted, and read again when
served), which is the paper's trade-off too (the third chunk waits).

The ref keys live beside the namespace's entries, not under its prefix
(``hotset-refs:{<namespace>:<chunk>}:...``, one hash slot per chunk for a
cluster), so scans of the namespace never meet them; they expire on their own
(``ttl_s``) when no job touches them.

Which ids form a chunk is the policy's (``GroupsEvictions.eviction_groups``); every job
on one data set and budget computes the same groups. A content-addressed
namespace (``digest=``) holds several data sets, each with its own chunk 0: there
the ref keys carry the data set's identity (``scope``), so a job releasing its
chunk is not kept waiting by a job holding another data set's chunk of that number. Ids outside any group
(``-1``) and whole units cached under ``n + unit`` are deleted as planned.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.cachestore.base import CacheKey, CacheStats
from hotset.coordination.namespace import SharedCache
from hotset.errors import HotsetError

__all__ = ["ChunkRefs"]

# KEYS: the chunk's job set, its first-release time. ARGV: job, now, force_after_s, ttl_s.
# Returns 1 when the entries are to be deleted now, 0 when they stay for other jobs.
# What another client wrote there is no reason to fail: a key of another type is no job
# set (deleted), and a first-release time that is no number, or lies ahead of now, is
# no release's (the clock starts now).
_RELEASE = """
if redis.call('TYPE', KEYS[1])['ok'] ~= 'set' then redis.call('DEL', KEYS[1]) end
if redis.call('TYPE', KEYS[2])['ok'] ~= 'string' then redis.call('DEL', KEYS[2]) end
redis.call('SREM', KEYS[1], ARGV[1])
if redis.call('SCARD', KEYS[1]) == 0 then
  redis.call('DEL', KEYS[2])
  return 1
end
local first = tonumber(redis.call('GET', KEYS[2]))
if (not first) or first ~= first or first > tonumber(ARGV[2]) + 1 then
  redis.call('SET', KEYS[2], ARGV[2], 'EX', ARGV[4])
  return 0
end
if tonumber(ARGV[2]) - first >= tonumber(ARGV[3]) then
  redis.call('DEL', KEYS[1], KEYS[2])
  return 1
end
return 0
"""


class ChunkRefs:
    """One job's handle on a shared namespace whose chunks are evicted in concert."""

    def __init__(
        self,
        cache: SharedCache,
        groups: npt.NDArray[np.int64],
        *,
        force_after_s: float,
        job: str | None = None,
        ttl_s: float = 600.0,
        scope: str = "",
    ) -> None:
        if not isinstance(cache, SharedCache):
            raise HotsetError(
                f"coordinated eviction needs a Redis namespace shared by the jobs, got {cache!r}"
            )
        if not force_after_s > 0:
            raise HotsetError(f"force_after_s must be > 0 seconds, got {force_after_s!r}")
        if not ttl_s > force_after_s:
            raise HotsetError(f"ttl_s must exceed force_after_s, got {ttl_s!r}")
        self.cache = cache
        self.groups = np.asarray(groups, dtype=np.int64)
        self.force_after_s = float(force_after_s)
        self.ttl_s = float(ttl_s)
        self.job = job or secrets.token_hex(8)
        #: which data set's chunks: a content-addressed namespace holds several data sets,
        #: whose chunk 3 are different chunks (empty: the namespace is one data set's)
        self.scope = str(scope)
        #: deletes this handle left for other jobs (per process)
        self.deferred = 0
        #: chunks released but kept for other jobs: group -> (local release time, keys);
        #: asked again at this handle's next write once ``force_after_s`` has passed
        self._pending: dict[int, tuple[float, list[CacheKey]]] = {}
        self._script: Any = cache.client.register_script(_RELEASE)  # loaded on first use

    def _keys(self, group: int) -> tuple[str, str]:
        within = f"{self.scope}:{group}" if self.scope else str(group)
        base = f"hotset-refs:{{{self.cache.namespace}:{within}}}"
        return f"{base}:jobs", f"{base}:first-release"

    def _group(self, key: CacheKey) -> int:
        sid = key.sample_id
        return int(self.groups[sid]) if sid < len(self.groups) else -1

    # -- what changes ---------------------------------------------------------------
    def put_many(self, items: Sequence[tuple[CacheKey, bytes]]) -> None:
        """Ref each chunk the items belong to for this job, then put them."""
        touched = {g for g in (self._group(k) for k, _ in items) if g >= 0}
        for g in touched:
            self._pending.pop(g, None)  # ours again: no longer ours to delete
        self._overdue()
        if touched:
            self._ref(sorted(touched))
        self.cache.put_many(items)

    def _ref(self, groups: list[int]) -> None:
        """Ref ``groups`` for this job (one round trip). A job set another client left
        of another type is deleted and the ref made again, not a failed put."""
        for attempt in range(2):
            pipe = self.cache.client.pipeline(transaction=False)
            for g in groups:
                jobs, first = self._keys(g)
                pipe.sadd(jobs, self.job)
                pipe.expire(jobs, int(self.ttl_s))
                pipe.delete(first)  # in use again: the forced-eviction clock starts anew
            with self.cache.talking():
                replies = pipe.execute(raise_on_error=attempt > 0)
            wrong = [
                g for g, r in zip(groups, replies[::3], strict=True) if isinstance(r, Exception)
            ]
            if not wrong:
                return
            pipe = self.cache.client.pipeline(transaction=False)
            for g in wrong:  # one key a command: a cluster's groups lie in several slots
                pipe.delete(self._keys(g)[0])
            with self.cache.talking():
                pipe.execute()
            groups = wrong

    def delete_many(self, keys: Sequence[CacheKey]) -> None:
        """Unref the chunks of ``keys``; delete the entries of those no job holds any more."""
        by_group: dict[int, list[CacheKey]] = {}
        now: list[CacheKey] = []
        for key in keys:
            g = self._group(key)
            if g < 0:
                now.append(key)
            else:
                by_group.setdefault(g, []).append(key)
        for g, members in sorted(by_group.items()):
            if self._release(g):
                now += members
                self._pending.pop(g, None)
            else:
                self.deferred += len(members)
                self._pending[g] = (time.monotonic(), members)
        if now:
            self.cache.delete_many(now)
        self._overdue()

    def leave(self, keys: Sequence[CacheKey]) -> None:
        """The job ends holding ``keys``: release their chunks as if consumed.

        Without this a job that finished kept its last chunks referenced, so the
        namespace held them beside the chunks of the jobs still running (started
        later, they are there) until the forced eviction, and refused those jobs'
        puts (Algorithm 1's ``informServersDoneUsingChunk``). Ids outside any group
        (Quiver's static set) stay for the next job, as they would.
        """
        grouped = [k for k in keys if self._group(k) >= 0]
        if grouped:
            self.delete_many(grouped)

    def _release(self, group: int) -> bool:
        """Unref ``group`` for this job; whether its entries are to be deleted now."""
        jobs, first = self._keys(group)
        args = [self.job, f"{time.time():.3f}", self.force_after_s, int(self.ttl_s)]
        with self.cache.talking():
            return bool(int(self._script(keys=[jobs, first], args=args)))

    def _overdue(self) -> None:
        """Force the eviction of chunks this job released ``force_after_s`` ago or more:
        when the server's first release is that old, or, whatever the server holds (a
        first-release time another client keeps rewriting ahead), once this job's own
        release is twice that old."""
        clock = time.monotonic()
        due = [g for g, (at, _) in self._pending.items() if clock - at >= self.force_after_s]
        gone: list[CacheKey] = []
        for g in due:
            late = clock - self._pending[g][0] >= 2 * self.force_after_s
            if self._release(g) or late:
                gone += self._pending.pop(g)[1]
        if gone:
            self.cache.delete_many(gone)

    def holders(self, group: int) -> set[str]:
        """The jobs holding chunk ``group`` now (for reports and tests)."""
        jobs, _ = self._keys(group)
        with self.cache.talking():
            return {j.decode() for j in self.cache.client.smembers(jobs)}

    # -- the rest is the namespace's ------------------------------------------------
    @property
    def capacity_bytes(self) -> int:
        return self.cache.capacity_bytes

    @property
    def namespace(self) -> str:
        return self.cache.namespace

    def get_many(self, keys: Sequence[CacheKey]) -> list[bytes | None]:
        return self.cache.get_many(keys)

    def contains(self, key: CacheKey) -> bool:
        return self.cache.contains(key)

    def used_bytes(self) -> int:
        return self.cache.used_bytes()

    def clear(self) -> None:
        self.cache.clear()

    def drop(self) -> None:
        self.cache.drop()

    def close(self) -> None:
        self.cache.close()

    def stats(self) -> CacheStats:
        return self.cache.stats()

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # the inner cache reconnects in the worker; the job stays the same job
        return (
            _reopen,
            (self.cache, self.groups, self.force_after_s, self.job, self.ttl_s, self.scope),
        )


def _reopen(
    cache: SharedCache,
    groups: npt.NDArray[np.int64],
    force_after_s: float,
    job: str,
    ttl_s: float,
    scope: str = "",
) -> ChunkRefs:
    return ChunkRefs(cache, groups, force_after_s=force_after_s, job=job, ttl_s=ttl_s, scope=scope)
