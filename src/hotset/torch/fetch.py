"""The worker side: execute one :class:`BatchPlan` -- move bytes, decide nothing.

For a plan, a worker (or the main process when ``num_workers == 0``):

1. starts the storage reads of the batch's single-sample reads -- those the
   main process's read-ahead has not already attached to the plan
   (``plan.staged``) -- and of its read units (a whole chunk each, one request,
   cut into samples by the dataset's layout) on a bounded pool of I/O threads
   (``io_threads`` per process), so a batch's reads overlap each other and,
   across workers, the training loop's compute; prefetched units arrive
   attached to the plan (``plan.staged_units``). A local store that answers
   faster than a thread hop costs is read inline (:mod:`hotset.torch.reads`).
   In a namespace shared with other jobs, planned misses and unit reads look
   in the pool first (:mod:`hotset.torch.pool`);
2. waits until the latest earlier batch that put one of its cached ids has
   written (``wait_for``), then reads its hits and substitutions from the cache
   in one ``get_many``; an id the policy holds but the cache does not (its put
   was abandoned, the cache was cleared on resume, a shared Redis entry was
   deleted through a twin id) is read from storage as a *rebuild read*, counted
   apart from storage reads, and put back;
3. waits for its write turn (``seq - 1`` written), deletes the plan's net
   evictions, puts its net admissions plus rebuilt ids, and marks ``seq`` written
   (:mod:`hotset.torch.cachewrite`);
4. decodes and collates ``(x, y, ids, w)`` (:mod:`hotset.torch.samples`), plus
   a small ``info`` dict of what it did; under ``augment=`` ``x`` is the batch's
   bytes as one buffer, or its crops as one uint8 tensor (:mod:`hotset.torch.devicepath`). ``y``, ``ids`` and ``w`` leave the
   worker as numpy arrays, made tensors (and pinned, with ``pin_memory``) by the
   loader: a tensor crosses from a worker as a shared-memory handle whose receipt
   costs the main process a socket connection to the worker (torch's
   ``file_descriptor`` sharing), about a millisecond each on 2 cores, while a
   64-entry array is a few hundred bytes pickled with the rest.

Steps 1 to 3 are one :class:`~hotset.torch.movebytes.BatchMove` per batch. A
failing cache never fails training: its calls fall back to storage reads and
back off (:mod:`hotset.torch.cacheio`).

Every storage read is checked against the manifest's size (always) and xxh3
(``verify``, on by default; :mod:`hotset.torch.reads`): a file that does not
match is an :class:`~hotset.errors.IntegrityError` naming its key and id. With
``verify`` every entry the cache serves is re-hashed too, against the hash its
key carries (the manifest's, or the layout's for a unit), because a shared
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

The fetcher is pickled to each worker (or inherited by a fork): it holds the
parts above and the data set's arrays, never the loader.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from hotset.cachestore.base import CacheKey, CacheStore
from hotset.engine.outcome import Outcome
from hotset.engine.plan import BatchPlan
from hotset.engine.units import UnitLayout
from hotset.errors import HotsetError
from hotset.storage.base import Store
from hotset.torch.cacheio import (
    BACKEND_ERRORS,
    BACKOFF_MAX_S,
    BACKOFF_MIN_S,
    CacheBackoff,
    CacheKeys,
    CacheTurn,
)
from hotset.torch.cachewrite import CacheWriter
from hotset.torch.dataset import DecodeSpec, check_decode
from hotset.torch.devicepath import VisionPath
from hotset.torch.movebytes import BatchMove
from hotset.torch.options import check_bool, check_int
from hotset.torch.pool import SharedPool
from hotset.torch.reads import StoreReader
from hotset.torch.samples import SampleDecoder, identity_collate
from hotset.torch.sequencer import Sequencer
from hotset.torch.workerseed import Reseed

try:  # a torch Dataset so DataLoader treats it as map-style; plain object if torch is absent
    from torch.utils.data import Dataset as _TorchDataset
except ImportError:  # pragma: no cover - the loader needs torch anyway
    _TorchDataset = object  # type: ignore[assignment,misc]

__all__ = [
    "BACKEND_ERRORS",
    "BACKOFF_MAX_S",
    "BACKOFF_MIN_S",
    "BatchAssembly",
    "BatchFetcher",
    "CacheBackoff",
    "CacheTurn",
    "FetchIO",
    "identity_collate",
]

_HIT, _SUB, _MISS, _PRE = (int(o) for o in Outcome)


@dataclass(frozen=True)
class FetchIO:
    """How a worker reads: threads per process, hashing, failures, and the shared pool.

    Checked with :class:`~hotset.torch.options.LoaderOptions`'s own checks, because a
    fetcher is also built by hand (tests, tools): ``verify="no"`` is truthy and would
    silently mean the opposite.
    """

    #: storage reads in flight per process
    io_threads: int
    #: re-hash what the cache serves and what storage returns (the module docstring)
    verify: bool
    #: ``on_error="skip"``: a sample whose read fails for good leaves its batch
    skip_errors: bool = False
    #: other loaders write the cache (other jobs on a shared namespace, other ranks on a
    #: node's embedded cache): misses look in it first (see hotset.torch.pool)
    shared: bool = False

    def __post_init__(self) -> None:
        check_int("io_threads", self.io_threads, 1)
        for name in ("verify", "skip_errors", "shared"):
            check_bool(name, getattr(self, name))


@dataclass(frozen=True)
class BatchAssembly:
    """How a batch's bytes become its ``x`` and ``y`` (step 4 of the module docstring).

    Grouped because they travel together to the worker and are used together there:
    decoding and the per-sample ``transform``, then the collation, or, under
    ``augment=``, the :class:`~hotset.torch.devicepath.VisionPath` instead of both.
    """

    #: ``"image"``, ``"pil"``, ``"pil-keep"``, ``"bytes"`` or a callable ``(bytes, key)``
    decode: DecodeSpec
    #: applied to each decoded sample
    transform: Callable[[Any], Any] | None = None
    #: the whole batch's collation (samples and labels); None: hotset's default
    collate_fn: Callable[[list[Any]], Any] | None = None
    #: the samples' collation alone (labels collated by hotset)
    collate_inputs: Callable[[list[Any]], Any] | None = None
    #: augment=: x is one encoded buffer or one uint8 tensor (hotset.torch.devicepath)
    vision: VisionPath | None = None

    def __post_init__(self) -> None:
        check_decode(self.decode)
        for name in ("transform", "collate_fn", "collate_inputs"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise HotsetError(f"{name} must be a callable or None, got {value!r:.80}")


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
        io: FetchIO,
        assembly: BatchAssembly,
        layout: UnitLayout | None = None,
        reseed: Reseed | None = None,
    ) -> None:
        self.layout = layout
        #: augment=: x is one encoded buffer or one uint8 tensor (hotset.torch.devicepath)
        self.vision = assembly.vision
        #: seeds a kept worker at each epoch as a fresh one would be (hotset.torch.workerseed)
        self.reseed = reseed
        #: other loaders write the cache (other jobs on a shared namespace, other ranks
        #: on a node's embedded cache): misses look in it first (see hotset.torch.pool)
        self.shared = io.shared
        self.keys = list(keys)
        self.hashes = list(hashes)
        self.sizes = sizes
        #: every read is checked against these sizes
        self.size_list: list[int] = np.asarray(sizes, dtype=np.int64).tolist()
        self.labels = labels
        self.cache = cache
        self.backoff = CacheBackoff()
        self.sequencer = sequencer
        #: re-hash what the cache serves (and, in the reader, what storage returns)
        self.verify = io.verify
        self.reader = StoreReader(
            store=store,
            keys=self.keys,
            hashes=self.hashes,
            sizes=self.size_list,
            layout=layout,
            io_threads=io.io_threads,
            verify=io.verify,
            skip_errors=io.skip_errors,
        )
        #: cache ids to keys (a sample below n, a unit above)
        self.cache_keys = CacheKeys(self.hashes, layout)
        self.writer = CacheWriter(
            cache, sequencer=sequencer, backoff=self.backoff, keys=self.cache_keys, shared=io.shared
        )
        self.pool = SharedPool(
            cache, keys=self.cache_keys, reader=self.reader, layout=layout, verify=io.verify
        )
        self.samples = SampleDecoder(
            keys=self.keys,
            reader=self.reader,
            decode=assembly.decode,
            transform=assembly.transform,
            collate_fn=assembly.collate_fn,
            collate_inputs=assembly.collate_inputs,
        )

    def __len__(self) -> int:
        return len(self.keys)

    def close(self) -> None:
        self.reader.close()

    def note_leftovers(self) -> None:
        """The cache may hold entries the policy does not (a clear that failed): a put
        refused over budget then clears it and puts again instead of failing."""
        self.writer.note_leftovers()

    def key_of(self, cid: int) -> CacheKey:
        """The cache key of cache id ``cid``: a sample below ``n``, unit ``cid - n`` above."""
        return self.cache_keys.key_of(cid)

    def decode_one(self, data: bytes, sid: int) -> Any:
        """Sample ``sid``'s bytes decoded (and transformed) as the data set says."""
        return self.samples.decode_one(data, sid)

    def collate(self, samples: list[Any], labels: Any) -> tuple[Any, Any]:
        """A batch's ``(x, y)`` from its samples and labels (:meth:`SampleDecoder.collate`)."""
        return self.samples.collate(samples, labels)

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

    def _move_bytes(self, plan: BatchPlan) -> tuple[dict[int, bytes], dict[str, Any]]:
        """Steps 1 to 3 of the module docstring: the batch's bytes, and what it did."""
        return BatchMove(self, plan).run()

    def _fetch(self, plan: BatchPlan) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        if not isinstance(plan, BatchPlan):
            raise HotsetError(f"the loader's dataset takes BatchPlans, got {type(plan).__name__}")
        if self.reseed is not None:
            self.reseed(plan.worker_seed)  # before the batch's transforms draw
        start = time.perf_counter()
        blobs, info = self._move_bytes(plan)
        cached = set(info.pop("cached_ids"))
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
        if self.vision is not None:
            sids = served.tolist()
            x: Any = self.vision.worker_x(
                [blobs[sid] for sid in sids],
                epoch=plan.epoch,
                index=plan.index,
                names=[self.keys[sid] for sid in sids],
            )
        elif self.samples.passes_bytes:
            x = [blobs[sid] for sid in served.tolist()]  # what collate makes of bytes
        y = self.labels[served]  # arrays, not tensors: see step 4 of the module docstring
        if self.vision is None and not self.samples.passes_bytes:
            decoded = self.samples.decode_all(served.tolist(), blobs, info, cached)
            x, y = self.collate(decoded, y)  # a collate_fn's y (mixup's, one-hot) is the batch's
        ids = served.copy()
        w = weights.astype(np.float32)
        info.update(
            # requests, exact hits, substitutions, fetched ahead, storage reads (the plan's:
            # a skipped sample was requested and decided all the same)
            outcomes=plan.served_counts(),
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
