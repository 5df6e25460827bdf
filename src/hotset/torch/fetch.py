"""The worker side: execute one :class:`BatchPlan` -- move bytes, decide nothing.

For a plan, a worker (or the main process when ``num_workers == 0``):

1. starts the storage reads of the batch's single-sample reads -- those the
   main process's read-ahead has not already attached to the plan
   (``plan.staged``) -- and of its read units (a whole chunk each, one request,
   cut into samples by the dataset's layout) on a bounded pool of I/O threads
   (``io_threads`` per process), so a batch's reads overlap each other and,
   across workers, the training loop's compute; prefetched units arrive
   attached to the plan (``plan.staged_units``). A local store that answers
   faster than a thread hop costs is read inline (:mod:`hotset.torch.reads`);
2. waits until the latest earlier batch that put one of its cached ids has
   written (``wait_for``), then reads its hits and substitutions from the cache
   in one ``get_many``; an id the policy holds but the cache does not (its put
   was abandoned, the cache was cleared on resume, a shared Redis entry was
   deleted through a twin id) is read from storage as a *rebuild read*, counted
   apart from storage reads, and put back;
3. waits for its write turn (``seq - 1`` written), deletes the plan's net
   evictions, puts its net admissions plus rebuilt ids, and marks ``seq`` written;
4. decodes and collates ``(x, y, ids, w)``, plus a small ``info`` dict of what it did.

A failing cache never fails training. When a cache call raises a backend error
(:data:`BACKEND_ERRORS`: the server is down, frozen past its timeout, or
refusing writes) the batch's cached ids are read from storage instead
(``degraded_reads``), the batch writes nothing to the cache but still takes its
write turn (later batches wait on it), and this process leaves the cache alone
for a short interval that grows while failures repeat (:class:`CacheBackoff`);
the first call that succeeds again resets it. Only byte moving degrades: the
plans, made by the policy in the main process, stay exactly as they were. The
policy then believes some ids cached that are not (their puts were skipped):
rebuild reads repair those. Deletes a degraded batch skipped are kept and
replayed at this process's next write that reaches the cache, so entries the
policy evicted do not linger and take its budget. A worker that exits first
(workers are started afresh each epoch) takes its list along, so skipped deletes
are also flagged in memory shared by every process of the loader: a put the
cache then refuses as over budget is put down to such leftovers, and the writer
-- holding the write turn, so no other writer of this loader interferes --
clears the cache and puts again (every id the policy holds becomes a rebuild
read).

Without the flag, whether a refused put is a policy bug depends on the cache.
The embedded shared-memory cache is private to this loader: nothing but its
own puts can fill it, so a refusal there is a policy bug and is raised (the
tests rely on it to catch one). A Redis namespace is not: other jobs share it,
another client may write to it, and a server whose ``maxmemory-policy`` evicts
drops entries behind the byte counter's back. The store resyncs its counter
before it refuses (:meth:`~hotset.cachestore.redis_store.RedisCache.resync`),
so a refusal there means the bytes really do not fit now; the batch then puts
what fits item by item and counts the rest (``refused_puts``/``refused_bytes``,
and ``cache_resyncs`` for the counter repairs), and training goes on: an id
whose put was refused is read again when next served (a rebuild read).

Every storage read is checked against the manifest's size (always) and xxh3
(``verify``, on by default; :mod:`hotset.torch.reads`): a file that does not
match is an :class:`~hotset.errors.IntegrityError` naming its key and id. With
``verify`` every entry the cache serves is re-hashed here too, against the hash
its key carries (the manifest's, or the layout's for a unit), because a shared
cache is written by more than this loader: another client of the same Redis
namespace, or a handle on the same shared-memory segment, may have stored other
bytes under the right key. Such an entry is never delivered. It is treated as
a lost one -- read from storage as a rebuild read, deleted in this batch's
write turn and put back -- and counted (``integrity_errors``), so a poisoned
cache costs reads, not training. The check is done here rather than in the
store so that one bad entry is repaired instead of failing the whole
``get_many`` (a store opened with ``verify`` raises instead).

A :class:`~hotset.errors.HotsetError` met while fetching a batch is returned
in place of the batch (after the write turn is taken, so later batches do not
wait on this one) and raised again by the loader in the main process: torch
would otherwise wrap it in a message of its own ("Caught HotsetError in
DataLoader worker process 0. Original Traceback ...") and the user would read
the error's name twice and its message buried in a traceback.

A hit or substitution that names a unit is cut from that unit, cached whole
under cache id ``n + unit`` (:meth:`BatchFetcher.key_of`).

Every sample cut from a unit is checked against the manifest (its size always,
its xxh3 with ``verify``), wherever the unit came from: a unit's own hash only
proves it is the file ``chunks.json`` describes, not that ``chunks.json`` still
describes this data set. A unit read from storage (here, or prefetched by the
main process) with a member that fails is an :class:`~hotset.errors.IntegrityError`
naming the chunk's key and the sample id, as a bad sample file is; a unit served
by the cache or the pool that fails is a poisoned entry, read again from
storage (:meth:`~hotset.torch.reads.StoreReader.split_read`, ``split_cached``).

In a namespace shared with other jobs, a batch first asks the pool, in one
pipelined ``get_many``, for its planned single-sample misses and for what it
needs of each unit it plans to read (:meth:`BatchFetcher._from_pool`): a miss
found there is not read, nor is a unit whose needed members are all there, so
jobs that load one data set's chunks in their own random orders read each chunk
about once between them (Quiver §5.2). Only storage reads are saved: outcomes,
puts and the counters of exact hits stay the plan's.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np
import numpy.typing as npt
import xxhash

from hotset.cachestore.base import CacheKey, CacheStore, PutRefused
from hotset.cachestore.claims import claim, release
from hotset.cachestore.redis_store import CacheUnavailable
from hotset.cachestore.shm import SharedMemoryCache
from hotset.engine.plan import BatchPlan
from hotset.engine.units import UnitLayout
from hotset.errors import HotsetError, IntegrityError
from hotset.policies.base import N_OUTCOMES, Outcome
from hotset.storage.base import Store
from hotset.torch.dataset import DecodeSpec, decode_sample
from hotset.torch.reads import StoreReader, xxh3_hex
from hotset.torch.sequencer import Sequencer

try:  # a torch Dataset so DataLoader treats it as map-style; plain object if torch is absent
    from torch.utils.data import Dataset as _TorchDataset
except ImportError:  # pragma: no cover - the loader needs torch anyway
    _TorchDataset = object  # type: ignore[assignment,misc]


def identity_collate(batch: Any) -> Any:
    """The DataLoader's collate_fn: a fetched plan is already a collated batch."""
    return batch


_HIT, _SUB, _MISS, _PRE = (int(o) for o in Outcome)

#: what a cache raises when its backend fails (not a refused put, not bad bytes):
#: RedisCache wraps redis-py's errors in CacheUnavailable; OSError covers a store
#: whose socket or file fails unwrapped
BACKEND_ERRORS: tuple[type[BaseException], ...] = (CacheUnavailable, OSError)
#: first and longest pause (seconds) of the cache after a failure
BACKOFF_MIN_S = 0.25
BACKOFF_MAX_S = 8.0


class CacheBackoff:
    """When this process may use the cache again after failures (per process, no I/O).

    Each failure doubles the pause, from :data:`BACKOFF_MIN_S` up to
    :data:`BACKOFF_MAX_S`, so a dead server costs one failed call per pause
    (a frozen one up to its socket timeout) instead of one per batch, and a
    server that comes back is used again within one pause.
    """

    def __init__(self, min_s: float = BACKOFF_MIN_S, max_s: float = BACKOFF_MAX_S) -> None:
        self.min_s, self.max_s = min_s, max_s
        self.pause_s = 0.0
        self.until = 0.0
        self.failures = 0
        #: cache keys whose deletes a degraded batch skipped, replayed on the next write
        self.pending_deletes: dict[CacheKey, None] = {}

    def usable(self) -> bool:
        return time.monotonic() >= self.until

    def failed(self) -> None:
        self.failures += 1
        self.pause_s = min(self.max_s, max(self.min_s, 2 * self.pause_s))
        self.until = time.monotonic() + self.pause_s

    def succeeded(self) -> None:
        self.pause_s = 0.0


class _CacheTurn:
    """One batch's dealings with the cache: still usable by it, and calls that failed."""

    __slots__ = ("errors", "ok", "refused", "refused_bytes", "resyncs")

    def __init__(self, ok: bool) -> None:
        self.ok = ok
        self.errors = 0
        #: puts refused over budget: other jobs filled a shared namespace, or the
        #: server evicted or another client wrote behind this loader's back
        self.refused = 0
        self.refused_bytes = 0
        #: times the store set its byte counter to what its entries hold
        self.resyncs = 0


class BatchFetcher(_TorchDataset):
    """A map-style dataset whose "index" is a BatchPlan and whose item is a whole batch."""

    def __init__(
        self,
        *,
        keys: Sequence[str],
        hashes: Sequence[str],
        sizes: npt.NDArray[np.int64],
        labels: npt.NDArray[np.int64],
        store: Store,
        cache: CacheStore | None,
        sequencer: Sequencer,
        decode: DecodeSpec,
        transform: Callable[[Any], Any] | None,
        io_threads: int,
        verify: bool,
        layout: UnitLayout | None = None,
        shared: bool = False,
        skip_errors: bool = False,
        collate_fn: Callable[[list[Any]], Any] | None = None,
    ) -> None:
        self.layout = layout
        #: the user's collate function for a batch's samples (None: see _collate)
        self.collate_fn = collate_fn
        #: the cache's namespace is shared with other jobs (see _write)
        self.shared = shared
        #: the cache is private to this loader (the embedded one): nothing outside it
        #: can fill its budget, so a put it refuses is a policy bug (see _put)
        self._private = isinstance(cache, SharedMemoryCache)
        self.keys = list(keys)
        self.hashes = list(hashes)
        self.sizes = sizes
        self._size_list: list[int] = np.asarray(sizes, dtype=np.int64).tolist()
        self.labels = labels
        self.cache = cache
        self.backoff = CacheBackoff()
        #: unit reads this process claimed in the batch being fetched (released after the put)
        self._claims: list[str] = []
        #: [deletes skipped by a degraded batch, in any process, since the last clear]:
        #: made here, in the main process, so that workers inherit it
        self._skipped: Any = multiprocessing.RawArray("q", 1)
        self.sequencer = sequencer
        self.decode = decode
        self.transform = transform
        #: re-hash what the cache serves (and, in the reader, what storage returns)
        self.verify = verify
        self.reader = StoreReader(
            store=store,
            keys=self.keys,
            hashes=self.hashes,
            sizes=self._size_list,
            layout=layout,
            io_threads=io_threads,
            verify=verify,
            skip_errors=skip_errors,
        )

    def __len__(self) -> int:
        return len(self.keys)

    def close(self) -> None:
        self.reader.close()

    def note_leftovers(self) -> None:
        """The cache may hold entries the policy does not (a clear that failed): a put
        refused over budget then clears it and puts again instead of failing."""
        self._skipped[0] += 1

    def key_of(self, cid: int) -> CacheKey:
        """The cache key of cache id ``cid``: a sample below ``n``, unit ``cid - n`` above."""
        n = len(self.keys)
        if cid < n:
            return CacheKey(cid, self.hashes[cid])
        assert self.layout is not None
        return CacheKey(cid, self.layout.chunk_hashes[cid - n])

    def __getitem__(
        self, plan: BatchPlan
    ) -> tuple[Any, Any, Any, Any, dict[str, Any]] | HotsetError:
        """The batch of ``plan``, or the :class:`HotsetError` that stopped it (see the module).

        Returned, not raised: torch re-raises a worker's exception inside a message
        of its own; the loader raises this one as it is (:meth:`HotsetLoader._run`).
        :meth:`_move_bytes` has taken the batch's write turn by then, error or not.
        """
        try:
            return self._fetch(plan)
        except HotsetError as exc:
            return exc

    def _fetch(self, plan: BatchPlan) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        if not isinstance(plan, BatchPlan):
            raise HotsetError(f"the loader's dataset takes BatchPlans, got {type(plan).__name__}")
        start = time.perf_counter()
        blobs, info = self._move_bytes(plan)
        info["io_seconds"] = time.perf_counter() - start
        served = plan.served
        weights = plan.weights
        failed = self._skipped_of(served, blobs) if self.reader.skip_errors else {}
        if failed:
            # on_error="skip": the samples whose reads failed for good leave the batch
            # (and training this epoch); the loader counts them and keeps their errors
            keep = np.fromiter((s in blobs for s in served.tolist()), dtype=bool, count=len(served))
            served, weights = served[keep], weights[keep]
        info["skipped"] = len(failed)
        info["skipped_errors"] = failed
        if self.decode == "bytes" and self.transform is None and self.collate_fn is None:
            x: Any = [blobs[sid] for sid in served.tolist()]  # what _collate makes of bytes
        else:
            x = self.collate(self._decode_all(served.tolist(), blobs, info))
        import torch

        y = torch.from_numpy(self.labels[served])
        ids = torch.from_numpy(served.copy())
        w = torch.from_numpy(weights.astype(np.float32))
        c = np.bincount(plan.outcomes, minlength=N_OUTCOMES).tolist()
        info.update(
            # in the loader's order: requests, exact hits, substitutions, prefetched, reads
            # (the plan's: a skipped sample was requested and decided all the same)
            outcomes=(len(plan.served), c[_HIT], c[_SUB], c[_PRE], c[_MISS]),
            epoch=plan.epoch,
            index=plan.index,
            fetch_seconds=time.perf_counter() - start,
            pid=os.getpid(),
        )
        return x, y, ids, w, info

    def _skipped_of(self, served: npt.NDArray[np.int64], blobs: dict[int, bytes]) -> dict[int, str]:
        """Skip mode: id -> error of each id this batch serves and could not read.

        Exactly the ids the batch leaves out. A failed read may also name ids the
        batch does not serve (the other members of a unit that only loads the
        cache): they are not skipped -- the policy believes them cached, so the
        batch that serves them reads them again (a rebuild read) -- and not counted.
        """
        failed = self.reader.take_failed()
        out: dict[int, str] = {}
        for sid in served.tolist():
            if sid not in blobs and sid not in out:
                out[sid] = failed.get(sid, "its read unit failed")
        return out

    def _move_bytes(self, plan: BatchPlan) -> tuple[dict[int, bytes], dict[str, Any]]:
        staged = plan.staged
        singles: list[int] = plan.reads.tolist()
        blobs: dict[int, bytes] = {}
        if staged:
            to_read = []
            for s in singles:
                data = staged.get(s)
                if data is None:
                    to_read.append(s)
                else:
                    blobs[s] = data
        else:
            to_read = singles
        unit_ids: list[int] = plan.unit_reads.tolist()
        # A shared namespace asks the pool first (see _from_pool): a unit whose needed
        # members other jobs already put is not read, so its read waits for the answer.
        pool_units = self.shared and bool(unit_ids) and self.cache is not None
        unit_reads = [] if pool_units else [(u, self.reader.submit_unit(u)) for u in unit_ids]
        #: whole units' bytes this batch holds: prefetched, cached, or read
        unit_raw: dict[int, bytes] = {}
        cached: list[int] = []
        cached_units: list[int] = []
        rebuild_ids: list[int] = []
        rebuild_units: list[int] = []
        #: cache entries that did not hash to their key: dropped in the write turn
        poisoned: list[CacheKey] = []
        degraded_ids: list[int] = []
        degraded_units: list[int] = []
        unit_bytes = rebuild_unit_bytes = degraded_unit_bytes = 0
        wait_s = 0.0
        turn = _CacheTurn(self.cache is not None and self.backoff.usable())
        error: BaseException | None = None
        keys: list[CacheKey] = []
        pooled: list[int] = []
        #: units not read because the pool held what the batch needs of them
        pooled_units: list[int] = []
        #: units not read because another job claimed their read (see _claimed_elsewhere)
        claimed_elsewhere: list[int] = []
        pool_bytes = 0
        try:
            for u, prefetched in plan.staged_units.items():  # read from storage, in the main
                self._take_read_unit(u, prefetched, unit_raw, blobs)
            cached, cached_units = self._cached(plan, singles, unit_ids, blobs)
            if self.shared and (to_read or pool_units) and self.cache is not None and turn.ok:
                pooled, to_read, pooled_units, pool_bytes = self._from_pool(
                    plan, to_read, unit_ids if pool_units else [], blobs, unit_raw, turn
                )
            if pool_units:
                skip = set(pooled_units)
                if turn.ok:
                    claimed_elsewhere = self._claimed_elsewhere(
                        plan, [u for u in unit_ids if u not in skip], turn
                    )
                    skip.update(claimed_elsewhere)
                unit_reads = [(u, self.reader.submit_unit(u)) for u in unit_ids if u not in skip]
            reads = self.reader.start(to_read, blobs)
            got: list[bytes | None] | None = None
            if (cached or cached_units) and self.cache is not None and turn.ok:
                wait_s += self.sequencer.wait_until(
                    plan.wait_for, generation=plan.generation, what=f"batch seq {plan.seq}"
                )
                hashes = self.hashes
                keys = [CacheKey(s, hashes[s]) for s in cached]
                keys += [self.key_of(len(self.keys) + u) for u in cached_units]
                got = self._cache_call(turn, self.cache.get_many, keys)
            if got is None and self.cache is not None:
                degraded_ids, degraded_units = cached, cached_units  # the cache failed
            elif got is not None:
                if self.verify:
                    got = self._drop_poisoned(keys, got, poisoned)
                for sid, data in zip(cached, got, strict=False):
                    if data is None:
                        rebuild_ids.append(sid)
                    else:
                        blobs[sid] = data
                for u, whole in zip(cached_units, got[len(cached) :], strict=True):
                    parts = None if whole is None else self.reader.split_cached(u, whole)
                    if whole is None or parts is None:
                        rebuild_units.append(u)
                        if whole is not None:  # a member the manifest disowns: poisoned
                            poisoned.append(self.key_of(len(self.keys) + u))
                    else:
                        unit_raw[u] = whole
                        blobs.update(parts)
            else:
                rebuild_ids, rebuild_units = cached, cached_units
            rebuild = self.reader.start(rebuild_ids, blobs)
            rebuilt = [(u, self.reader.submit_unit(u)) for u in rebuild_units]
            degraded = self.reader.start(degraded_ids, blobs)
            degraded_reads = [(u, self.reader.submit_unit(u)) for u in degraded_units]
            self.reader.collect(reads, blobs)
            unit_bytes = self._collect_units(unit_reads, unit_raw, blobs)
            self.reader.collect(rebuild, blobs)
            rebuild_unit_bytes = self._collect_units(rebuilt, unit_raw, blobs)
            self.reader.collect(degraded, blobs)
            degraded_unit_bytes = self._collect_units(degraded_reads, unit_raw, blobs)
        except BaseException as exc:  # still take the write turn, or later batches would stall
            error = exc
        t = time.perf_counter()
        self._write(plan, blobs, unit_raw, rebuild_ids, rebuild_units, poisoned, turn)
        wait_s += time.perf_counter() - t
        if self._claims:  # the claimed units are in the pool now: let others find them
            claims, self._claims = self._claims, []
            self._cache_call(turn, lambda names: release(self.cache, names), claims)
        if error is not None:
            raise error
        sizes = self._size_list  # every read was checked against these
        info: dict[str, Any] = {
            # read-ahead's and prefetch's requests are counted by the loader
            "storage_requests": len(to_read) + len(unit_reads),
            "unit_reads": len(unit_reads),
            "pack_reads": plan.pack_requests,
            "pack_bytes": plan.pack_bytes,
            "storage_bytes": sum([sizes[s] for s in to_read]) + unit_bytes,
            "staged_reads": len(singles) - len(to_read),
            "rebuild_reads": len(rebuild_ids) + len(rebuild_units),
            "rebuild_bytes": sum([sizes[s] for s in rebuild_ids]) + rebuild_unit_bytes,
            "degraded_reads": len(degraded_ids) + len(degraded_units),
            "degraded_bytes": sum([sizes[s] for s in degraded_ids]) + degraded_unit_bytes,
            "cache_errors": turn.errors,
            "refused_puts": turn.refused,
            "refused_bytes": turn.refused_bytes,
            "cache_resyncs": turn.resyncs,
            "pool_hits": len(pooled),
            "pool_bytes": pool_bytes,
            "pool_unit_hits": len(pooled_units),
            "claimed_units": len(claimed_elsewhere),
            "integrity_errors": len(poisoned),
            "cache_reads": len(cached)
            + len(cached_units)
            - len(rebuild_ids)
            - len(rebuild_units)
            - len(degraded_ids)
            - len(degraded_units),
            "wait_seconds": wait_s,
        }
        return blobs, info

    def _collect_units(
        self,
        reads: list[tuple[int, Future[bytes]]],
        unit_raw: dict[int, bytes],
        blobs: dict[int, bytes],
    ) -> int:
        """Wait for whole-unit reads, cut them into samples; the bytes read."""
        nbytes = 0
        for u, fut in reads:
            whole = self.reader.unit_or_skip(u, fut)
            if whole is None:
                continue  # skip mode: its members are in reader.failed
            nbytes += len(whole)
            self._take_read_unit(u, whole, unit_raw, blobs)
        return nbytes

    def _take_read_unit(
        self, u: int, data: bytes, unit_raw: dict[int, bytes], blobs: dict[int, bytes]
    ) -> None:
        """Cut a unit read from storage into ``blobs``, every member checked (see reads).

        A unit a member of which failed (skip mode) is not kept whole, so it is never
        cached whole; its good members are delivered (and put, where the plan puts
        members).
        """
        parts, whole = self.reader.split_read(u, data)
        blobs.update(parts)
        if whole:
            unit_raw[u] = data

    @staticmethod
    def _drop_poisoned(
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

    def _cache_call(self, turn: _CacheTurn, call: Callable[[Any], Any], arg: Any) -> Any:
        """``call(arg)``, or ``None`` when the cache's backend fails (then back off).

        A call returning nothing (a put, a delete) returns ``True`` on success.
        """
        try:
            out = call(arg)
        except BACKEND_ERRORS:
            turn.errors += 1
            turn.ok = False
            self.backoff.failed()
            return None
        self.backoff.succeeded()
        return out if out is not None else True

    def _cached(
        self, plan: BatchPlan, singles: list[int], unit_ids: list[int], blobs: dict[int, bytes]
    ) -> tuple[list[int], list[int]]:
        """(sample ids, units) this batch serves from the cache, not from its own reads.

        A hit or substitution naming a unit is served from that unit, cached whole.
        """
        is_cached = plan.outcomes <= _SUB
        if not is_cached.any():
            return [], []
        incoming = set(singles)
        if unit_ids:
            assert self.layout is not None
            for u in unit_ids:
                incoming.update(self.layout.members(u).tolist())
        served = plan.served[is_cached].tolist()
        units = plan.units[is_cached]
        if int(units.max()) < 0:
            return [s for s in dict.fromkeys(served) if s not in incoming and s not in blobs], []
        held = set(unit_ids) | plan.staged_units.keys()
        cached: dict[int, None] = {}
        cached_units: dict[int, None] = {}
        for s, u in zip(served, units.tolist(), strict=True):
            if u >= 0:
                if u not in held:
                    cached_units[u] = None
            elif s not in incoming and s not in blobs:
                cached[s] = None
        return list(cached), list(cached_units)

    def _write(
        self,
        plan: BatchPlan,
        blobs: dict[int, bytes],
        unit_raw: dict[int, bytes],
        rebuild: list[int],
        rebuild_units: list[int],
        poisoned: list[CacheKey],
        turn: _CacheTurn,
    ) -> None:
        cache = self.cache
        if cache is None:
            # Nothing is ever written, so no batch waits for another: taking turns would
            # only hold a finished worker until the one before it finished too.
            return
        n = len(self.keys)
        hashes = self.hashes
        deletes: list[int] = plan.deletes.tolist()
        items: list[tuple[CacheKey, bytes]] = []
        for cid in plan.puts.tolist():
            if cid < n:
                if cid in blobs:
                    items.append((CacheKey(cid, hashes[cid]), blobs[cid]))
            elif cid - n in unit_raw:  # a unit cached whole
                items.append((self.key_of(cid), unit_raw[cid - n]))
        if rebuild or rebuild_units:
            gone = set(deletes)
            items += [
                (CacheKey(s, hashes[s]), blobs[s]) for s in rebuild if s in blobs and s not in gone
            ]
            items += [
                (self.key_of(n + u), unit_raw[u])
                for u in rebuild_units
                if u in unit_raw and n + u not in gone
            ]
        delete_keys = [self.key_of(s) for s in deletes]
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
                if self._cache_call(turn, cache.delete_many, delete_keys) is None:
                    # Unknown which landed: deleting again is harmless, so keep them all.
                    self._skip_deletes(delete_keys)
                    return
                backoff.pending_deletes.clear()
            if items:
                self._put(turn, cache, items)

    def _put(
        self, turn: _CacheTurn, cache: CacheStore, items: list[tuple[CacheKey, bytes]]
    ) -> None:
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
                self._cache_call(turn, cache.put_many, items)
                return
            except PutRefused as exc:
                refused = exc
            if not self.shared and self._skipped[0]:
                turn.errors += 1
                if self._cache_call(turn, lambda _: cache.clear(), None) is None:
                    return
                self._skipped[0] = 0
                self.backoff.pending_deletes.clear()
                try:
                    self._cache_call(turn, cache.put_many, items)
                    return
                except PutRefused as exc:
                    refused = exc
            if self._private:
                raise refused  # over budget with nothing outside to blame: a policy bug
            self._put_what_fits(turn, cache, items)
        finally:
            if not self._private:
                turn.resyncs += cache.stats().resyncs - before

    def _from_pool(
        self,
        plan: BatchPlan,
        sids: list[int],
        units: list[int],
        blobs: dict[int, bytes],
        unit_raw: dict[int, bytes],
        turn: _CacheTurn,
    ) -> tuple[list[int], list[int], list[int], int]:
        """Shared namespace: what the pool spares storage, in one pipelined ``get_many``.

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

        Returns (sample ids whose bytes came from the pool, single ids still to read,
        units not to read, bytes the pool served). Found samples and units count as
        ``pool_hits``/``pool_unit_hits``, never as hits: the plan's outcomes stay.
        """
        assert self.cache is not None
        n = len(self.keys)
        wanted_by_unit = self._unit_needs(plan, units, blobs) if units else {}
        #: cache id -> its position in the one lookup (a member may also be a single)
        position: dict[int, int] = {s: i for i, s in enumerate(sids)}
        for cids in wanted_by_unit.values():
            for cid in cids:
                position.setdefault(cid, len(position))
        if not position:
            return [], sids, [], 0
        keys = [self.key_of(cid) for cid in position]
        got = self._cache_call(turn, self.cache.get_many, keys)
        if got is None:
            return [], sids, [], 0
        verify = self.verify
        fine: list[bytes | None] = [
            data
            if data is not None and (not verify or xxh3_hex(data) == key.content_hash)
            else None
            for key, data in zip(keys, got, strict=True)
        ]
        found: dict[int, None] = {}
        nbytes = 0
        missing = []
        for sid in sids:
            data = fine[position[sid]]
            if data is None:
                missing.append(sid)
            else:
                blobs[sid] = data
                found[sid] = None
                nbytes += len(data)
        pooled_units = []
        for u, cids in wanted_by_unit.items():
            datas = [fine[position[cid]] for cid in cids]
            if not all(d is not None for d in datas):
                continue  # read from storage as without a pool
            cut = None
            if cids[0] >= n:  # the unit cached whole: cut it as a read would be
                assert datas[0] is not None
                cut = self.reader.split_cached(u, datas[0])
                if cut is None:
                    continue  # a member the manifest disowns: read it from storage
            pooled_units.append(u)
            for cid, data in zip(cids, datas, strict=True):
                assert data is not None
                if cid >= n:
                    assert cut is not None
                    unit_raw[cid - n] = data
                    parts = cut
                    fresh = [m for m in self._served_members(plan, cid - n) if m not in found]
                    for m in fresh:
                        found[m] = None
                    blobs.update(parts)
                    nbytes += len(data)
                elif cid not in found:
                    blobs[cid] = data
                    found[cid] = None
                    nbytes += len(data)
        return list(found), missing, pooled_units, nbytes

    def _claimed_elsewhere(self, plan: BatchPlan, units: list[int], turn: _CacheTurn) -> list[int]:
        """Of ``units`` to read, those that only load the cache and another job is reading.

        A unit some request of this batch is served from is always read (the batch
        needs its bytes now); so is one without a content hash to name it by
        (:mod:`hotset.cachestore.claims`). A failing claim reads everything.
        """
        layout = self.layout
        if not units or layout is None:
            return []
        serving = set(plan.units[plan.units >= 0].tolist())
        hashes = layout.chunk_hashes
        loads = [u for u in units if u not in serving and u < len(hashes) and hashes[u]]
        if not loads:
            return []
        names = [hashes[u] for u in loads]
        mine = self._cache_call(turn, lambda names: claim(self.cache, names), names)
        if mine is None:
            return []
        self._claims = [name for name, ok in zip(names, mine, strict=True) if ok]
        return [u for u, ok in zip(loads, mine, strict=True) if not ok]

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
        n = len(self.keys)
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

    def _put_what_fits(
        self, turn: _CacheTurn, cache: CacheStore, items: list[tuple[CacheKey, bytes]]
    ) -> None:
        """Over budget where others may hold bytes: each item alone; a refused one is counted.

        Costs a round trip per item, only in batches whose put was refused. An id
        whose put was refused is one the policy believes cached: it is read again
        (a rebuild read) when next served, and put again then.
        """
        for item in items:
            try:
                if self._cache_call(turn, cache.put_many, [item]) is None:
                    return  # the backend failed: the rest would too
            except PutRefused:
                turn.refused += 1
                turn.refused_bytes += len(item[1])

    def _skip_deletes(self, keys: list[CacheKey]) -> None:
        """Remember deletes the cache did not take: replayed here, flagged for all."""
        if keys:
            self.backoff.pending_deletes.update(dict.fromkeys(keys))
            self._skipped[0] += len(keys)

    # -- decoding -----------------------------------------------------------------
    def decode_one(self, data: bytes, sid: int) -> Any:
        return decode_sample(self.decode, self.transform, data, self.keys[sid])

    def _decode_all(
        self, sids: list[int], blobs: dict[int, bytes], info: dict[str, Any]
    ) -> list[Any]:
        """Each sample decoded; one whose bytes are not a valid encoding is read again.

        With ``verify=False`` a cache entry is not hashed, so an entry another
        client of the namespace overwrote reaches decoding: a user's item that is
        not a valid encoding (:class:`~hotset.data.itemcodec.ItemDecodeError`)
        is read from storage and decoded from there, counted as an integrity error
        and a rebuild read, as a poisoned entry is with ``verify``. Bytes storage
        itself returns that do not decode are a real data problem: raised.
        """
        out = []
        for sid in sids:
            try:
                out.append(self.decode_one(blobs[sid], sid))
            except IntegrityError:
                fresh = self.reader.read_checked(sid)
                if fresh == blobs[sid]:
                    raise
                blobs[sid] = fresh
                info["integrity_errors"] += 1
                info["rebuild_reads"] += 1
                info["rebuild_bytes"] += len(fresh)
                out.append(self.decode_one(fresh, sid))
        return out

    def collate(self, samples: list[Any]) -> Any:
        """A batch's ``x``: the user's ``collate_fn``, else stacked tensors or arrays.

        Samples of one shape are stacked; tensors or arrays of several shapes,
        and bytes, stay a list. Anything else goes through torch's
        ``default_collate`` (dicts, tuples, numbers), and what that cannot batch
        (a ``PIL.Image`` without a ``ToTensor`` transform, say) is a clear error
        naming the two fixes, rather than a list the model then chokes on.
        """
        if self.collate_fn is not None:
            return self.collate_fn(samples)
        import torch

        if not samples:
            return samples
        if all(isinstance(s, torch.Tensor) for s in samples):
            shape = samples[0].shape
            return torch.stack(samples) if all(s.shape == shape for s in samples) else samples
        if all(isinstance(s, np.ndarray) for s in samples):
            shape = samples[0].shape
            if all(s.shape == shape for s in samples):
                return torch.from_numpy(np.stack(samples))
            return samples
        if all(isinstance(s, bytes | str) for s in samples):
            return samples
        from torch.utils.data import default_collate

        try:
            return default_collate(samples)
        except (TypeError, RuntimeError) as exc:
            kind = type(samples[0]).__name__
            raise HotsetError(
                f"cannot batch samples of type {kind}: give the loader collate_fn= (a "
                "function from a list of samples to a batch), or a transform= that returns "
                f"tensors (for PIL images, torchvision.transforms.ToTensor()); {exc}"
            ) from None
