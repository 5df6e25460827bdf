"""The worker side: execute one :class:`BatchPlan` -- move bytes, decide nothing.

For a plan, a worker (or the main process when ``num_workers == 0``):

1. starts the storage reads of the batch's single-sample reads -- those the
   main process's read-ahead has not already attached to the plan
   (``plan.staged``) -- and of its read units (a whole chunk each, one request,
   cut into samples by the dataset's layout) on a bounded pool of I/O threads
   (``io_threads`` per process), so a batch's reads overlap each other and,
   across workers, the training loop's compute; prefetched units arrive
   attached to the plan (``plan.staged_units``). The one exception: a local
   store that answers a read faster than a thread hop costs (the page cache,
   :data:`INLINE_READ_MAX_S`) is read inline, and goes back to the threads
   when its reads turn slow (a network mount, a cold disk);
2. waits until the latest earlier batch that put one of its cached ids has
   written (``wait_for``), then reads its hits and substitutions from the cache
   in one ``get_many``; an id the policy holds but the cache does not (its put
   was abandoned, the cache was cleared on resume, a shared Redis entry was
   deleted through a twin id) is read from storage as a *rebuild read*, counted
   apart from storage reads, and put back;
3. waits for its write turn (``seq - 1`` written), deletes the plan's net
   evictions, puts its net admissions plus rebuilt ids, and marks ``seq`` written;
4. decodes and collates ``(x, y, ids, w)``, plus a small ``info`` dict of what it did.

Every storage read is checked against the manifest's size (always) and xxh3
(``verify=True``); with ``verify`` the cache re-hashes what it serves too.
"""

from __future__ import annotations

import collections
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.cachestore.base import CacheKey, CacheStore
from hotset.engine.plan import BatchPlan
from hotset.engine.units import UnitLayout
from hotset.errors import HotsetError, IntegrityError
from hotset.policies.base import N_OUTCOMES, Outcome
from hotset.storage.base import Store
from hotset.storage.local import LocalStore
from hotset.torch.dataset import DecodeSpec
from hotset.torch.sequencer import Sequencer

try:  # a torch Dataset so DataLoader treats it as map-style; plain object if torch is absent
    from torch.utils.data import Dataset as _TorchDataset
except ImportError:  # pragma: no cover - the loader needs torch anyway
    _TorchDataset = object  # type: ignore[assignment,misc]


def identity_collate(batch: Any) -> Any:
    """The DataLoader's collate_fn: a fetched plan is already a collated batch."""
    return batch


#: ids read by one thread, and the future of their bytes (in the same order)
_Reads = tuple[list[int], Future[list[bytes]]]
_HIT, _SUB, _MISS, _PRE = (int(o) for o in Outcome)
#: a local store whose reads take longer than this on average (a network mount, a
#: cold disk) is read on the I/O threads, where reads overlap; see _start_reads
INLINE_READ_MAX_S = 100e-6
#: while reads go to the threads, every this many read calls one read is timed inline
PROBE_EVERY = 16
#: inline reads are judged by the median of the latest _WINDOW, every _JUDGE_EVERY reads
_WINDOW = 32
_JUDGE_EVERY = 8


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
    ) -> None:
        self.layout = layout
        self.keys = list(keys)
        self.hashes = list(hashes)
        self.sizes = sizes
        self._size_list: list[int] = np.asarray(sizes, dtype=np.int64).tolist()
        self.labels = labels
        self.store = store
        self.cache = cache
        self.sequencer = sequencer
        self.decode = decode
        self.transform = transform
        self.io_threads = io_threads
        self.verify = verify
        self._pool: ThreadPoolExecutor | None = None
        self._pool_pid = -1
        #: reads may be made inline (see _start_reads): a store on this machine
        self._inline_capable = isinstance(store, LocalStore)
        self._recent: collections.deque[float] = collections.deque(maxlen=_WINDOW)
        self._pool_calls = 0  # read calls left on the threads before one is timed inline

    def __len__(self) -> int:
        return len(self.keys)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_pool"] = None  # threads never cross a process boundary
        state["_pool_pid"] = -1
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def pool(self) -> ThreadPoolExecutor:
        if self._pool is None or self._pool_pid != os.getpid():
            self._pool = ThreadPoolExecutor(self.io_threads, thread_name_prefix="hotset-io")
            self._pool_pid = os.getpid()
        return self._pool

    def close(self) -> None:
        if self._pool is not None and self._pool_pid == os.getpid():
            self._pool.shutdown(wait=False, cancel_futures=True)
        self._pool = None

    def read_checked(self, sid: int) -> bytes:
        """One storage read of ``sid``, checked against the manifest (read-ahead uses it too)."""
        data = self.store.read(self.keys[sid])
        if self.verify or len(data) != self._size_list[sid]:
            self._check(sid, data)
        return data

    def _check(self, sid: int, data: bytes) -> None:
        """Raise unless ``data`` has the manifest's size (and, with ``verify``, its hash)."""
        if len(data) != self._size_list[sid]:
            raise IntegrityError(
                f"{self.keys[sid]!r} (id {sid}): the store returned {len(data)} bytes, "
                f"the manifest says {self._size_list[sid]}"
            )
        if self.verify:
            from hotset.data.manifest import content_hash

            got = content_hash(data)
            if got != self.hashes[sid]:
                raise IntegrityError(
                    f"{self.keys[sid]!r} (id {sid}): stored bytes hash to {got}, "
                    f"the manifest says {self.hashes[sid]}"
                )

    def read_unit(self, unit: int) -> bytes:
        """One storage request for a whole unit, checked against the layout."""
        layout = self.layout
        if layout is None:
            raise HotsetError(f"plan reads unit {unit}, but the dataset has no chunk layout")
        key = layout.chunk_keys[unit]
        data = self.store.read(key)
        want = int(layout.chunk_sizes[unit])
        if len(data) != want:
            raise IntegrityError(
                f"{key!r} (unit {unit}): the store returned {len(data)} bytes, the layout says {want}"
            )
        if self.verify:
            from hotset.data.manifest import content_hash

            got = content_hash(data)
            if got != layout.chunk_hashes[unit]:
                raise IntegrityError(
                    f"{key!r} (unit {unit}): bytes hash to {got}, "
                    f"the layout says {layout.chunk_hashes[unit]}"
                )
        return data

    def key_of(self, cid: int) -> CacheKey:
        """The cache key of cache id ``cid``: a sample below ``n``, unit ``cid - n`` above."""
        n = len(self.keys)
        if cid < n:
            return CacheKey(cid, self.hashes[cid])
        assert self.layout is not None
        return CacheKey(cid, self.layout.chunk_hashes[cid - n])

    def _split(self, unit: int, data: bytes) -> dict[int, bytes]:
        assert self.layout is not None
        return self.layout.split(unit, data)

    def __getitem__(self, plan: BatchPlan) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        if not isinstance(plan, BatchPlan):
            raise HotsetError(f"the loader's dataset takes BatchPlans, got {type(plan).__name__}")
        start = time.perf_counter()
        blobs, info = self._move_bytes(plan)
        info["io_seconds"] = time.perf_counter() - start
        served = plan.served
        if self.decode == "bytes" and self.transform is None:
            x: Any = [blobs[sid] for sid in served.tolist()]  # what _collate makes of bytes
        else:
            x = self._collate([self._decode_one(blobs[sid], sid) for sid in served.tolist()])
        import torch

        y = torch.from_numpy(self.labels[served])
        ids = torch.from_numpy(served.copy())
        w = torch.from_numpy(plan.weights.astype(np.float32))
        c = np.bincount(plan.outcomes, minlength=N_OUTCOMES).tolist()
        info.update(
            # in the loader's order: requests, exact hits, substitutions, prefetched, reads
            outcomes=(len(served), c[_HIT], c[_SUB], c[_PRE], c[_MISS]),
            epoch=plan.epoch,
            index=plan.index,
            fetch_seconds=time.perf_counter() - start,
            pid=os.getpid(),
        )
        return x, y, ids, w, info

    # -- bytes --------------------------------------------------------------------
    def _submit(self, sids: list[int]) -> list[_Reads]:
        """Read ``sids`` on up to ``io_threads`` threads, each taking every n-th id.

        One task per thread rather than per id: the requests still overlap
        ``io_threads`` at a time, without a future (and a lock round trip) per sample.
        """
        if not sids:
            return []
        pool = self.pool()
        lanes = min(self.io_threads, len(sids))
        return [
            (chunk, pool.submit(self._read_chunk, chunk))
            for chunk in (sids[i::lanes] for i in range(lanes))
        ]

    def _read_chunk(self, sids: list[int]) -> list[bytes]:
        read, keys, sizes, verify = self.store.read, self.keys, self._size_list, self.verify
        out: list[bytes] = []
        for sid in sids:
            data = read(keys[sid])
            if verify or len(data) != sizes[sid]:
                self._check(sid, data)
            out.append(data)
        return out

    def _read_inline(self, sids: list[int], blobs: dict[int, bytes]) -> int:
        """Read ``sids`` in order, in this thread, until the reads prove slow; how many were read."""
        read, keys, sizes, verify = self.store.read, self.keys, self._size_list, self.verify
        recent = self._recent
        clock = time.perf_counter
        done = 0
        t = clock()
        for sid in sids:
            data = read(keys[sid])
            if verify or len(data) != sizes[sid]:
                self._check(sid, data)
            blobs[sid] = data
            now = clock()
            recent.append(now - t)
            t = now
            done += 1
            if not done % _JUDGE_EVERY and self._reads_slow():
                break
        return done

    def _reads_slow(self) -> bool:
        """Whether most of the latest inline reads (at least a few) took over the limit."""
        recent = self._recent
        if len(recent) < _JUDGE_EVERY:
            return False
        slow = sum([t > INLINE_READ_MAX_S for t in recent])
        return slow > len(recent) // 2

    def _start_reads(self, sids: list[int], blobs: dict[int, bytes]) -> list[_Reads]:
        """Read ``sids``: inline into ``blobs`` where that is cheaper, else on the I/O threads.

        A thread hop costs more than a read the page cache answers, so a local
        store is read inline while most of its latest reads take at most
        :data:`INLINE_READ_MAX_S` (a median: one stalled read changes nothing).
        Slower reads (a network mount, a cold disk) go to the threads, where
        they overlap; after :data:`PROBE_EVERY` calls there, one read is timed
        inline to look again. Any other store (remote, or a throttled model of
        one) is always read on the threads.
        """
        if not sids:
            return []
        if not self._inline_capable:
            return self._submit(sids)
        done = 0
        if self._pool_calls > 0:
            self._pool_calls -= 1
            if self._pool_calls:
                return self._submit(sids)
            self._recent.clear()  # the probe: one read, timed inline
            done = self._read_inline(sids[:1], blobs)
            if self._recent[-1] > INLINE_READ_MAX_S:
                self._pool_calls = PROBE_EVERY
                return self._submit(sids[done:])
        done += self._read_inline(sids[done:], blobs)
        if self._reads_slow():
            self._recent.clear()
            self._pool_calls = PROBE_EVERY
        return self._submit(sids[done:])

    @staticmethod
    def _collect(reads: list[_Reads], blobs: dict[int, bytes]) -> None:
        for chunk, fut in reads:
            blobs.update(zip(chunk, fut.result(), strict=True))

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
        unit_reads = [(u, self.pool().submit(self.read_unit, u)) for u in unit_ids]
        #: whole units' bytes this batch holds: prefetched, cached, or read
        unit_raw: dict[int, bytes] = dict(plan.staged_units)
        for u, prefetched in unit_raw.items():
            blobs.update(self._split(u, prefetched))
        cached, cached_units = self._cached(plan, singles, unit_ids, blobs)
        rebuild_ids: list[int] = []
        rebuild_units: list[int] = []
        unit_bytes = rebuild_unit_bytes = 0
        wait_s = 0.0
        error: BaseException | None = None
        try:
            reads = self._start_reads(to_read, blobs)
            if (cached or cached_units) and self.cache is not None:
                wait_s += self.sequencer.wait_until(
                    plan.wait_for, generation=plan.generation, what=f"batch seq {plan.seq}"
                )
                hashes = self.hashes
                keys = [CacheKey(s, hashes[s]) for s in cached]
                keys += [self.key_of(len(self.keys) + u) for u in cached_units]
                got = self.cache.get_many(keys)
                for sid, data in zip(cached, got, strict=False):
                    if data is None:
                        rebuild_ids.append(sid)
                    else:
                        blobs[sid] = data
                for u, data in zip(cached_units, got[len(cached) :], strict=True):
                    if data is None:
                        rebuild_units.append(u)
                    else:
                        unit_raw[u] = data
                        blobs.update(self._split(u, data))
            else:
                rebuild_ids, rebuild_units = cached, cached_units
            rebuild = self._start_reads(rebuild_ids, blobs)
            rebuilt = [(u, self.pool().submit(self.read_unit, u)) for u in rebuild_units]
            self._collect(reads, blobs)
            for u, fut in unit_reads:
                whole = unit_raw[u] = fut.result()
                unit_bytes += len(whole)
                blobs.update(self._split(u, whole))
            self._collect(rebuild, blobs)
            for u, fut in rebuilt:
                whole = unit_raw[u] = fut.result()
                rebuild_unit_bytes += len(whole)
                blobs.update(self._split(u, whole))
        except BaseException as exc:  # still take the write turn, or later batches would stall
            error = exc
        t = time.perf_counter()
        self._write(plan, blobs, unit_raw, rebuild_ids, rebuild_units)
        wait_s += time.perf_counter() - t
        if error is not None:
            raise error
        sizes = self._size_list  # every read was checked against these
        info: dict[str, Any] = {
            # read-ahead's and prefetch's requests are counted by the loader
            "storage_requests": len(to_read) + len(unit_ids),
            "storage_bytes": sum([sizes[s] for s in to_read]) + unit_bytes,
            "staged_reads": len(singles) - len(to_read),
            "rebuild_reads": len(rebuild_ids) + len(rebuild_units),
            "rebuild_bytes": sum([sizes[s] for s in rebuild_ids]) + rebuild_unit_bytes,
            "cache_reads": len(cached) + len(cached_units) - len(rebuild_ids) - len(rebuild_units),
            "wait_seconds": wait_s,
        }
        return blobs, info

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
        with self.sequencer.writing(plan.seq, generation=plan.generation):
            if deletes:
                cache.delete_many([self.key_of(s) for s in deletes])
            if items:
                cache.put_many(items)

    # -- decoding -----------------------------------------------------------------
    def _decode_one(self, data: bytes, sid: int) -> Any:
        mode = self.decode
        if mode == "bytes":
            out: Any = data
        elif mode == "image":
            import torch

            from hotset.data.decode import decode

            out = torch.from_numpy(decode(data, self.keys[sid]))
        else:
            assert callable(mode)
            out = mode(data, self.keys[sid])
        return self.transform(out) if self.transform is not None else out

    @staticmethod
    def _collate(samples: list[Any]) -> Any:
        import torch

        if samples and all(isinstance(s, torch.Tensor) for s in samples):
            shape = samples[0].shape
            if all(s.shape == shape for s in samples):
                return torch.stack(samples)
        if samples and all(isinstance(s, np.ndarray) for s in samples):
            shape = samples[0].shape
            if all(s.shape == shape for s in samples):
                return torch.from_numpy(np.stack(samples))
        return samples
