"""The real loader: a PyTorch DataLoader whose order and cache a hotset System decides.

Usage (see ``hotset.loader``)::

    data = hotset.open_dataset("file:///data/train", decode="image", transform=tf)
    loader = hotset.loader(data, system="shade", cache="2gb", batch_size=256, num_workers=8)
    for epoch in range(epochs):
        loader.set_epoch(epoch)
        for x, y, ids, w in loader:
            loss = F.cross_entropy(model(x), y, reduction="none")
            loader.update(ids, loss.detach())
            (loss * w).mean().backward()
    ckpt["data"] = loader.state_dict()

How it is built, and why:

* **One planner, in the main process.** The DataLoader gets a sampler whose
  items are whole :class:`~hotset.engine.plan.BatchPlan` objects
  (``batch_size=None``: automatic batching off), made lazily as the DataLoader
  asks for the next index, so every policy call happens in one place and in a
  fixed order. Feedback is applied with the fixed lag ``num_workers *
  prefetch_factor`` (see :mod:`hotset.engine.planner`), so the decisions are those
  a simulator loop with the same lag makes.
* **Workers move bytes only** (:mod:`hotset.torch.fetch`), and apply cache
  writes in plan order (:mod:`hotset.torch.sequencer`).
* **Read-ahead over the whole epoch** (:mod:`hotset.torch.readahead`): the
  DataLoader looks only ``num_workers * prefetch_factor`` batches ahead, so the
  main process also reads the epoch's not-yet-cached ids ahead, in order, into
  a staging area of ``readahead_bytes`` (default 64 MiB, outside the cache
  budget; 0 turns it off; off by default for systems that substitute misses;
  idle in an epoch where most ids are uncached), and attaches them to the plans
  that need them. Its reads are storage reads and are counted as such
  (``readahead_reads``; ``readahead_wasted`` for those nothing used).
* **No torch internals are touched**: a stock DataLoader with a custom sampler,
  dataset and collate function; pin_memory, persistent_workers, timeouts and
  multiprocessing contexts are the DataLoader's own.

Epoch life cycle: ``iter(loader)`` begins an epoch (closing the previous one:
remaining feedback applied, ``system.end_epoch`` called with the mean training
loss and the accuracy given to :meth:`HotsetLoader.record_validation`). An
epoch abandoned midway (a ``break``) is closed the same way at the next
``iter``; plans the workers never executed are abandoned, their evictions
applied to the cache and their admissions rebuilt lazily.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import multiprocessing
import multiprocessing.context
import os
import re
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np
from torch.utils.data import Sampler

from hotset.cachestore.base import CacheStore
from hotset.cachestore.chunk_refs import ChunkRefs
from hotset.cachestore.redaction import redact_spec_value
from hotset.cachestore.redis_leases import LEASE_TTL_S
from hotset.cachestore.redis_store import RedisCache
from hotset.cachestore.session import CacheSession, check_share_backend, check_share_key
from hotset.data.digest import Digest, digest_for_job
from hotset.data.package_writer import PackageWriter
from hotset.engine.counters import Coverage
from hotset.engine.feedback import Feedback
from hotset.engine.packages import PackageFiles
from hotset.engine.plan import EpochLog
from hotset.engine.planner import Planner
from hotset.engine.units import UnitLayout
from hotset.errors import HotsetError
from hotset.importance.table import as_ids, as_values
from hotset.policies.base import Budget
from hotset.storage.local import LocalStore
from hotset.systems.base import System
from hotset.torch.checks import check_budget, check_manifest_matches_store
from hotset.torch.dataset import HotsetDataset, open_dataset
from hotset.torch.fetch import BACKEND_ERRORS, BatchFetcher, identity_collate
from hotset.torch.forksafe import start_method_name, worker_start_method
from hotset.torch.packing import PackingThread
from hotset.torch.prefetch import UnitPrefetcher
from hotset.torch.ranks import active_world, merge_epoch
from hotset.torch.readahead import ReadAhead
from hotset.torch.report import EpochStats
from hotset.torch.sequencer import Sequencer
from hotset.torch.state import check_epoch, check_loader_state
from hotset.torch.user import is_unhashed, unhashed_verify_error
from hotset.torch.workers import WorkerInit
from hotset.units import parse_budget, parse_bytes

STATE_VERSION = 1
_EMBEDDED = ("memory", "shm")
#: what a sample whose read fails for good does: stop training, or leave the batch
_ON_ERROR = ("raise", "skip")
#: the cache budget when none is given: a fifth of the data set's bytes
DEFAULT_CACHE = "20%"
#: torch's message when a worker process is gone ("DataLoader worker (pid(s) 12)
#: exited unexpectedly", "... is killed by signal: Killed.")
_WORKER_DIED = re.compile(r"DataLoader worker \(pid")
#: read-ahead's default staging budget (outside the cache's budget)
DEFAULT_READAHEAD_BYTES = 64 * 2**20


def _check_int(name: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
        raise HotsetError(f"{name} must be an integer >= {low}, got {value!r:.80}")
    return int(value)


def _check_bool(name: str, value: object) -> bool:
    """Only True/False: ``verify="no"`` is truthy and would silently mean the opposite."""
    if not isinstance(value, bool | np.bool_):
        raise HotsetError(f"{name} must be True or False, got {value!r:.80}")
    return bool(value)


def _check_timeout(value: object) -> float:
    """A finite number of seconds >= 0 (0: wait forever), checked before torch sees it."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float | np.integer | np.floating)
        or not math.isfinite(value)
        or value < 0
    ):
        raise HotsetError(
            f"timeout must be a finite number of seconds >= 0 (0 waits forever), got {value!r:.80}"
        )
    return float(value)


def _dist_rank_world() -> tuple[int, int]:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return int(dist.get_rank()), int(dist.get_world_size())
    return 0, 1


def system_state(system: System) -> dict[str, Any]:
    """Everything of a System that changes while it runs (sampler/scorer are pure)."""
    try:
        policy = system.policy.state_dict()
    except NotImplementedError as exc:
        raise HotsetError(f"system {system.name!r}: {exc}; its loader cannot checkpoint") from None
    return {
        "policy": policy,
        "table": system.table.state_dict(),
        "val_accuracy": list(system.val_accuracy),
        "train_loss": list(system.train_loss),
    }


def load_system_state(system: System, state: Mapping[str, Any]) -> None:
    for key in ("policy", "table", "val_accuracy", "train_loss"):
        if key not in state:
            raise HotsetError(f"loader state: system state lacks {key!r}")
    try:
        system.policy.load_state_dict(state["policy"])
    except NotImplementedError as exc:
        raise HotsetError(f"system {system.name!r}: {exc}") from None
    policy = system.policy
    if not policy.budget.fits(int(policy.used_bytes), int(policy.used_items)):
        raise HotsetError(
            f"loader state: the {policy.name} policy holds {policy.used_bytes} bytes "
            f"({policy.used_items} items), over this loader's cache budget of "
            f"{policy.budget.capacity_bytes} bytes: resume with the cache= of the run "
            "that saved it"
        )
    system.table.load_state_dict(state["table"])
    system.val_accuracy[:] = [float(v) for v in state["val_accuracy"]]
    system.train_loss[:] = [float(v) for v in state["train_loss"]]


def _package_store(
    package_dir: str | os.PathLike[str] | None, *, system: str, packs: bool
) -> LocalStore | None:
    """The local directory packages go to (``package_dir``); None: into the data store."""
    if package_dir is None:
        return None
    if not isinstance(package_dir, str | os.PathLike):
        raise HotsetError(f"package_dir must be a directory path, got {package_dir!r:.80}")
    if not packs:
        raise HotsetError(
            f"package_dir={str(package_dir)!r}: system {system!r} builds no packages "
            "(only iCACHE and ImPACT systems write them)"
        )
    try:
        return LocalStore(package_dir, create=True)
    except HotsetError as exc:  # cannot be made (a read-only or full parent, a file there)
        raise HotsetError(f"package_dir={str(package_dir)!r}: {exc}") from None


class _PlanSampler(Sampler[Any]):
    """The DataLoader's sampler: each item is the next BatchPlan of the current epoch.

    It holds the planner, not the loader: a loader -> DataLoader -> sampler ->
    loader cycle would leave persistent workers to the cycle collector, which
    may finalize the workers' queues before the iterator that shuts them down.
    """

    def __init__(
        self,
        planner: Planner,
        readahead: ReadAhead,
        prefetcher: UnitPrefetcher,
        packages: PackingThread,
    ) -> None:
        self._planner = planner
        self._readahead = readahead
        self._prefetcher = prefetcher
        self._packages = packages

    def __iter__(self) -> Iterator[Any]:
        ra = self._readahead
        pf = self._prefetcher
        for plan in self._planner.plans():
            plan = self._packages.write(plan)  # a package with no file: its members alone
            if len(plan.prefetch):
                pf.submit(plan.prefetch.tolist())
            if ra.active and len(plan.reads):
                end = plan.index * self._planner.batch_size + len(plan)
                staged = ra.take(dict.fromkeys(plan.reads.tolist()), frontier=end)
                if staged:
                    plan = dataclasses.replace(plan, staged=staged)
            if int(plan.units.max(initial=-1)) >= 0:
                wanted = plan.served_from_units
                if len(wanted):
                    plan = dataclasses.replace(plan, staged_units=pf.take(wanted.tolist()))
            yield plan

    def __len__(self) -> int:
        return self._planner.n_batches - self._planner.planned


class HotsetLoader:
    """An iterable of ``(x, y, ids, w)`` batches; see the module docstring and :func:`loader`."""

    def __init__(
        self,
        data: HotsetDataset | Any,
        *,
        system: str = "lru",
        cache: str | int | float | list[str] | None = None,
        cache_bytes: int | str | None = None,
        batch_size: int = 64,
        num_workers: int = 0,
        seed: int = 0,
        pin_memory: bool = False,
        persistent_workers: bool = False,
        prefetch_factor: int | None = None,
        io_threads: int = 8,
        readahead_bytes: int | str | None = None,
        drop_last: bool = False,
        verify: bool = True,
        rank: int | None = None,
        world_size: int | None = None,
        system_options: Mapping[str, Any] | None = None,
        namespace: str | None = None,
        digest: str | os.PathLike[str] | Digest | None = None,
        package_dir: str | os.PathLike[str] | None = None,
        lease_ttl_s: float = LEASE_TTL_S,
        on_error: str = "raise",
        check_store: str = "auto",
        progress: bool = False,
        timeout: float = 0.0,
        multiprocessing_context: str | multiprocessing.context.BaseContext | None = None,
        worker_init_fn: Callable[[int], None] | None = None,
        collate_fn: Callable[[list[Any]], Any] | None = None,
    ) -> None:
        from torch.utils.data import DataLoader

        from hotset.systems.registry import build_system, capabilities_of, get_spec

        #: what the user gave: a HotsetDataset, or their own map-style Dataset
        self.dataset = data
        if not isinstance(data, HotsetDataset):
            try:
                data = as_hotset_dataset(data, progress=progress is True)
            except HotsetError as exc:
                raise HotsetError(
                    "data must be a HotsetDataset (hotset.open_dataset(...)), a data set "
                    f"location, or a map-style Dataset: {exc}"
                ) from None
        if collate_fn is not None and not callable(collate_fn):
            raise HotsetError(f"collate_fn must be callable or None, got {collate_fn!r:.80}")
        # Every option is type-checked here, by name: a wrong type would otherwise surface
        # as a torch/numpy traceback, or (verify="no" being truthy) silently mean the opposite.
        if not isinstance(system, str):
            raise HotsetError(f"system must be a system name (a string), got {system!r:.80}")
        get_spec(system)  # unknown name -> HotsetError listing the known ones
        batch_size = _check_int("batch_size", batch_size, 1)
        num_workers = _check_int("num_workers", num_workers, 0)
        io_threads = _check_int("io_threads", io_threads, 1)
        seed = _check_int("seed", seed, 0)
        pin_memory = _check_bool("pin_memory", pin_memory)
        persistent_workers = _check_bool("persistent_workers", persistent_workers)
        drop_last = _check_bool("drop_last", drop_last)
        verify = _check_bool("verify", verify)
        if verify and is_unhashed(data.manifest):
            # from_dataset(sizes=...) hashed nothing: checks happen only if the user opts out
            raise unhashed_verify_error(data.source)
        progress = _check_bool("progress", progress)
        timeout = _check_timeout(timeout)
        namespace = check_share_key(namespace)
        if on_error not in _ON_ERROR:
            raise HotsetError(
                f"on_error must be one of {', '.join(map(repr, _ON_ERROR))}, got {on_error!r:.80}"
            )
        if (
            isinstance(lease_ttl_s, bool)
            or not isinstance(lease_ttl_s, int | float)
            or not 0 < lease_ttl_s < math.inf
        ):
            raise HotsetError(
                f"lease_ttl_s must be a positive number of seconds, got {lease_ttl_s!r:.80}"
            )
        if not isinstance(check_store, str):
            raise HotsetError(f"check_store must be a string, got {check_store!r:.80}")
        if system_options is not None and not isinstance(system_options, Mapping):
            raise HotsetError(
                f"system_options must be a mapping of option names to values, "
                f"got {system_options!r:.80}"
            )
        if system_options is not None and not all(isinstance(k, str) for k in system_options):
            raise HotsetError(f"system_options keys must be strings, got {system_options!r:.80}")
        if worker_init_fn is not None and not callable(worker_init_fn):
            raise HotsetError(
                f"worker_init_fn must be callable or None, got {worker_init_fn!r:.80}"
            )
        if multiprocessing_context is not None:
            methods = multiprocessing.get_all_start_methods()
            if isinstance(multiprocessing_context, str):
                if multiprocessing_context not in methods:
                    raise HotsetError(
                        f"multiprocessing_context must be one of {', '.join(methods)}, "
                        f"got {multiprocessing_context!r:.80}"
                    )
            elif not isinstance(multiprocessing_context, multiprocessing.context.BaseContext):
                raise HotsetError(
                    "multiprocessing_context must be a start method name or a context, "
                    f"got {multiprocessing_context!r:.80}"
                )
        if num_workers == 0:
            if prefetch_factor is not None:
                raise HotsetError("prefetch_factor needs num_workers > 0")
            if persistent_workers:
                raise HotsetError("persistent_workers=True needs num_workers > 0")
            lag = 0
        else:
            prefetch_factor = 2 if prefetch_factor is None else prefetch_factor
            prefetch_factor = _check_int("prefetch_factor", prefetch_factor, 1)
            lag = num_workers * prefetch_factor
        if rank is None and world_size is None:
            rank, world_size = _dist_rank_world()
        rank = _check_int("rank", 0 if rank is None else rank, 0)
        world_size = _check_int("world_size", 1 if world_size is None else world_size, 1)
        if rank >= world_size:
            raise HotsetError(f"rank {rank} is not below world_size {world_size}")
        multiprocessing_context, start_why = worker_start_method(
            multiprocessing_context, num_workers=num_workers
        )
        if start_why is not None:
            warnings.warn(f"hotset: {start_why}", RuntimeWarning, stacklevel=3)

        manifest = data.manifest
        n = len(manifest)
        sizes = np.asarray(manifest.sizes, dtype=np.int64)
        spec, capacity = self._resolve_cache(cache, cache_bytes, int(sizes.sum()))
        check_share_backend(namespace, spec)  # namespace= means Redis: never ignored
        # A job's ranks on one shared namespace hold one pool of ``capacity``: each
        # rank's policy plans its share, so the ranks never crowd each other out, and
        # a rank's planned miss is looked up in the pool (what the other ranks put).
        pooled_ranks = namespace is not None and world_size > 1
        planned = capacity // world_size if pooled_ranks else capacity
        fits_whole = planned >= int(np.sum(sizes))
        if namespace is not None and not fits_whole and capabilities_of(system).evicts_in_concert:
            # Jobs cycling through chunks in concert each plan two chunks of a third: a
            # chunk one job still holds while another loads its next fits beside them.
            planned = planned * 2 // 3
        self.system: System = build_system(
            system,
            n=n,
            budget=Budget(capacity_bytes=planned, sizes=sizes),
            seed=seed,
            batch_size=batch_size,
            layout=data.layout,
            **dict(system_options or {}),
        )
        caps = self.system.capabilities
        #: the packing step (a policy that builds packages), run in this process ahead
        #: of the workers: they read a package file as one request, by its key alone
        self._packer: PackageWriter | None = None
        unit_layout: UnitLayout | None = data.layout
        package_store = _package_store(package_dir, system=system, packs=caps.packs)
        if caps.packs:
            self._packer = PackageWriter.for_policy(
                self.system.policy,
                data.store,
                keys=manifest.keys,
                hashes=manifest.hashes,
                sizes=sizes,
                label="loader",
                out=package_store,
            )
            unit_layout = PackageFiles(n, prefix=self._packer.prefix, store=package_store)
        if readahead_bytes is None:
            # A policy that may serve another id in place of a miss, or reads whole
            # units, makes "not cached now" a poor guess of what will be read alone;
            # so does a shared namespace, where other jobs may hold this job's misses.
            guess_fails = (
                caps.substitutes or caps.reads_units or caps.packs or namespace is not None
            )
            ra_budget = 0 if guess_fails else DEFAULT_READAHEAD_BYTES
        else:
            ra_budget = parse_bytes(readahead_bytes, name="readahead_bytes")
        if caps.needs_future:
            raise HotsetError(
                f"system {system!r} needs the whole future (an offline bound); "
                "run it in the simulator (hotset simulate), not the loader"
            )
        if not caps.realizable:
            raise HotsetError(
                f"system {system!r} is a bound that holds everything without charging the "
                "budget; it cannot drive a real cache (the simulator and the loader "
                "benchmark's no-io row measure it)"
            )
        caching = caps.caches
        if caps.plans_world and world_size > 1 and namespace is None:
            raise HotsetError(
                f"system {system!r} across {world_size} ranks keeps one memory for the whole "
                "job: give every rank the same shared cache, e.g. cache='redis://host:6379/0', "
                "cache_bytes='20%', namespace='my-job'"
            )
        if caching:
            check_budget(planned, sizes, batch_size)
        job_digest: Digest | None = None
        if digest is not None:  # content addressing (hotset.cachestore.capability)
            if caps.packs:
                raise HotsetError(
                    f"digest with system {system!r}: its packages are built at run time, so "
                    "no digest holds their capabilities; use a system that reads samples or chunks"
                )
            job_digest = digest_for_job(
                digest,
                manifest,
                unit_hashes=() if data.layout is None else data.layout.chunk_hashes,
                reads_units=caps.reads_units,
            )
        check_manifest_matches_store(manifest, data.store, mode=check_store, seed=seed)

        self.data = data
        self.batch_size = batch_size
        self.num_workers = num_workers
        self.rank, self.world_size = rank, world_size
        #: how DataLoader starts workers: None is its default (fork on Linux); see
        #: hotset.torch.forksafe for when the loader chooses "forkserver" itself
        self.multiprocessing_context = multiprocessing_context
        self.seed = seed
        self.lag = lag
        self.capacity_bytes = capacity if caching else 0
        self.progress = progress
        self.cache: CacheStore | None = None
        #: the cache's namespace and lease (hotset.cachestore.session); None without a cache
        self._session: CacheSession | None = None
        if caching:
            # A private namespace is new and empty, as the fresh policy is; a shared
            # one is joined as it is (other jobs may be reading it).
            self._session = CacheSession.open(
                spec,
                capacity_bytes=capacity,
                # one slot per sample, then one per read unit (cached whole under id n + u)
                n_slots=n + (0 if data.layout is None else data.layout.n_chunks),
                dataset_id=manifest.identity(),
                share=namespace,
                rank=rank,
                lease_ttl_s=lease_ttl_s,
                digest=job_digest,
                # The fetcher re-hashes what the cache serves itself (with ``verify``), so
                # that a poisoned entry is dropped and re-read instead of failing the
                # batch; the store's own check would only raise, and hash puts again.
                verify=False,
            )
            self.cache = self._session.cache
            groups = self.system.policy.eviction_groups() if self._session.shared else None
            if groups is not None and isinstance(self.cache, RedisCache):
                # jobs sharing the namespace evict a group once all have released it
                self.cache = ChunkRefs(
                    self.cache, groups.groups, force_after_s=groups.force_after_s
                )
        self._sequencer = Sequencer(context=multiprocessing_context)
        self._planner = Planner(
            self.system, n=n, batch_size=batch_size, lag=lag, drop_last=drop_last, sizes=sizes
        )
        self._coverage = Coverage(n)
        self._fetcher = BatchFetcher(
            keys=manifest.keys,
            hashes=manifest.hashes,
            sizes=sizes,
            labels=np.asarray(manifest.labels, dtype=np.int64),
            store=data.store,
            cache=self.cache,
            sequencer=self._sequencer,
            decode=data.decode,
            transform=data.transform,
            io_threads=io_threads,
            verify=verify,
            layout=unit_layout,
            shared=self._session is not None and self._session.shared,
            skip_errors=on_error == "skip",
            collate_fn=collate_fn,
        )
        #: on_error="skip": id -> why its read failed, for every sample skipped so far
        self._skipped: dict[int, str] = {}
        self._readahead = ReadAhead(
            self._fetcher.reader.read_checked, sizes, budget_bytes=ra_budget, threads=io_threads
        )
        self._prefetcher = UnitPrefetcher(self._fetcher.reader.read_unit, threads=io_threads)
        self._packages = PackingThread(self.system, self._packer)
        #: evaluate_with(fn): the forward pass of samples a system re-evaluates
        self._evaluator: Callable[[Any, Any, Any], Any] | None = None
        self._warned_evaluate = False
        #: samples evaluate_with read from storage because the cache did not hold them
        self.evaluate_reads = 0
        #: workers die with the main process (see hotset.torch.workers), then the user's init
        self._worker_init = WorkerInit(
            worker_init_fn, forkserver=start_method_name(multiprocessing_context) == "forkserver"
        )
        self._dataloader: DataLoader[Any] | None = DataLoader(
            self._fetcher,
            batch_size=None,
            sampler=_PlanSampler(self._planner, self._readahead, self._prefetcher, self._packages),
            num_workers=num_workers,
            collate_fn=identity_collate,
            pin_memory=pin_memory,
            persistent_workers=persistent_workers,
            prefetch_factor=prefetch_factor,
            timeout=timeout,
            multiprocessing_context=multiprocessing_context,
            worker_init_fn=self._worker_init,
        )
        # epoch state
        self._status = "idle"  # idle | running | finished
        self._next_epoch = 0
        self._epoch_set = False
        self._yielded = 0
        #: seconds from the previous yield (or the epoch's first ask) to each batch's yield
        self._batch_seconds: list[float] = []
        #: update() calls this epoch (a learning system without any fails clearly)
        self._updates = 0
        self._outstanding = np.zeros(n, dtype=np.int32)
        self._pending_val: float | None = None
        self._start_state: dict[str, Any] | None = None
        self._history: list[EpochStats] = []
        self._current: EpochStats | None = None
        self._gen: Iterator[Any] | None = None
        self._resumed = False

    # -- construction helpers -----------------------------------------------------
    @staticmethod
    def _resolve_cache(
        cache: str | int | float | list[str] | None, cache_bytes: int | str | None, total: int
    ) -> tuple[str | list[str], int]:
        """(backend spec, capacity in bytes) from the user's ``cache`` / ``cache_bytes``.

        A budget is an int or a string of bytes (``"2gb"``), a float fraction in
        (0, 1] or a percentage (``"20%"``) of ``total``; a float outside (0, 1]
        is an error (see :func:`hotset.units.parse_budget`). A list (or tuple) is
        a Redis Cluster's startup nodes, checked when the cache opens. A spec in
        an error is shown without its passwords.
        """

        def amount(value: int | float | str, name: str) -> int:
            # int: bytes; "2gb": bytes; float in (0, 1] or "20%": a share of the dataset's bytes
            return parse_budget(value, total=total, name=name)

        if isinstance(cache, list | tuple):
            if cache_bytes is None:
                raise HotsetError(
                    f"cache {redact_spec_value(cache)} (Redis Cluster nodes) needs "
                    "cache_bytes= (its budget)"
                )
            return list(cache), amount(cache_bytes, "cache_bytes")
        if isinstance(cache, str) and ("://" in cache or cache.strip().lower() in _EMBEDDED):
            if cache_bytes is None:
                raise HotsetError(
                    f"cache {redact_spec_value(cache)} needs cache_bytes= (its budget)"
                )
            return cache, amount(cache_bytes, "cache_bytes")
        if cache is None:
            # the embedded cache at a share that pays on most data sets (see loader())
            return "memory", amount(DEFAULT_CACHE if cache_bytes is None else cache_bytes, "cache")
        if cache_bytes is not None:
            raise HotsetError(
                f"give the budget once: cache={redact_spec_value(cache)} is already a size, "
                "drop cache_bytes"
            )
        try:
            return "memory", amount(cache, "cache")
        except HotsetError:
            if isinstance(cache, str) and ("@" in cache or "redis" in cache.lower()):
                # a cache URL mistyped (redis:/, a missing ':'): the budget parser's
                # message would show it whole, password included
                raise HotsetError(
                    f"cache {redact_spec_value(cache)} is neither a budget (bytes, '20%', a "
                    "fraction) nor a cache ('memory', 'redis://host:port/db', "
                    "'redis+cluster://h1:p1,h2:p2' or a list of 'host:port' nodes)"
                ) from None
            raise

    # -- the user API ---------------------------------------------------------------
    def set_epoch(self, epoch: int) -> None:
        """The epoch the next ``iter(loader)`` runs (orders are keyed by it)."""
        self._next_epoch = check_epoch("epoch", epoch)
        self._epoch_set = True

    def __len__(self) -> int:
        """Batches the current epoch yields, or the next one will, on this rank.

        Before an epoch the count is predicted from how the system's sampler
        shards: ranks get ``ceil(n / world_size)`` ids (padded by wrapping, as
        torch's DistributedSampler does), or ``n // world_size`` when the sampler
        drops the remainder; a recorded trace has its own length per epoch. The
        last partial batch counts unless ``drop_last``.
        """
        if self._status == "running":
            return self._planner.n_batches
        from hotset.samplers.pads import PADSSampler
        from hotset.samplers.shard import shard_len
        from hotset.samplers.trace import TraceSampler

        sampler = self.system.sampler
        n = len(self.data.manifest)
        # "finished" closes at the next iter(), which then runs set_epoch's or the next one
        epoch = (
            self._next_epoch
            if self._status == "idle" or self._epoch_set
            else self._planner.epoch + 1
        )
        if isinstance(sampler, TraceSampler) and 0 <= epoch < len(sampler.epochs):
            ids = len(sampler.epochs[epoch])
        elif isinstance(sampler, PADSSampler):
            ids = sampler.per_rank_length(self.world_size)
        else:
            drop = bool(getattr(sampler, "drop_last", False))
            ids = shard_len(n, self.world_size, drop_last=drop)
        full, rest = divmod(ids, self.batch_size)
        return full + (1 if rest and not self._planner.drop_last else 0)

    def __iter__(self) -> Iterator[tuple[Any, Any, Any, Any]]:
        if self._dataloader is None:
            raise HotsetError("the loader is closed")
        self._stop_iteration()
        if self._resumed and self._status in ("running", "finished"):
            self._resumed = False
            moved_on = self._epoch_set and self._next_epoch != self._planner.epoch
            if self._status == "finished" or moved_on:
                self._close_epoch()
        elif self._status in ("running", "finished"):
            self._close_epoch()
        if self._status == "idle":
            self._begin_epoch(self._next_epoch)
        self._abandon_unwritten(clear=False)
        self._gen = self._run()
        return self._gen

    def update(self, ids: Any, losses: Any) -> None:
        """Per-sample losses of a batch, keyed by the ids the loader yielded with it."""
        if self._status == "idle":
            raise HotsetError("update: no epoch in progress; iterate the loader first")
        if getattr(losses, "ndim", None) == 0 or isinstance(losses, int | float):
            raise HotsetError(
                "update: losses must hold one loss per sample (shape (batch,)), got a single "
                "number: compute the loss with reduction='none', e.g. "
                "F.cross_entropy(out, y, reduction='none'), and take .mean() for backward()"
            )
        id_arr = as_ids(ids, what="update ids")
        loss_arr = as_values(losses, len(id_arr), id_arr, what="update losses")
        n = len(self._outstanding)
        bad = (id_arr < 0) | (id_arr >= n)
        if bad.any():
            sid = int(id_arr[int(np.argmax(bad))])
            raise HotsetError(f"update: sample id {sid} is not in the dataset (ids 0..{n - 1})")
        uniq, need = np.unique(id_arr, return_counts=True)
        short = need > self._outstanding[uniq]
        if short.any():
            sid = int(uniq[int(np.argmax(short))])
            raise HotsetError(
                f"update: sample id {sid} was not yielded by this loader in epoch "
                f"{self._planner.epoch} (or its loss was already given)"
            )
        self._outstanding[uniq] -= need.astype(np.int32)
        self._updates += 1
        self._planner.give(self._yielded - 1, id_arr.copy(), loss_arr.copy())

    def record_validation(self, accuracy: float) -> None:
        """Validation accuracy of the epoch just iterated (samplers may switch modes on it)."""
        if isinstance(accuracy, bool) or not isinstance(accuracy, int | float):
            raise HotsetError(f"accuracy must be a number, got {accuracy!r}")
        if not math.isfinite(accuracy):
            raise HotsetError(f"accuracy must be finite, got {accuracy!r}")
        if self._status == "idle":
            raise HotsetError("record_validation: no epoch to attach it to")
        self._pending_val = float(accuracy)

    def summary(self) -> str:
        """The report as a table to print: one line per epoch, what people read.

        Hits next to coverage (distinct samples trained), the training loss and
        validation accuracy the loop gave (``update``, ``record_validation``),
        stall and throughput.
        """
        from hotset.torch.report import summary_table

        return summary_table(
            self.report(), train_loss=self.system.train_loss, val_accuracy=self.system.val_accuracy
        )

    def report(self) -> list[dict[str, Any]]:
        """One row per epoch (the current one too): counts, stall and throughput."""
        rows = [s.row() for s in self._history]
        if self._current is not None:
            rows.append({**self._current.row(), **self._coverage.peek()})
        return rows

    def policy_summary(self) -> dict[str, Any]:
        """What the system's policy says of its own choices so far (JSON-ready).

        The same dictionary the simulator reports as ``policy``: Quiver's chunks and
        how far samples moved from their planned places, iCACHE's packages, ...;
        plus, once a package file could not be written, what became of them
        (``package_write_errors``, ``package_fallback_reads``: hotset.torch.packing).
        """
        return {**self.system.policy.summary(), **self._packages.summary()}

    @property
    def namespace(self) -> str | None:
        """The cache's Redis namespace (``<key>@<data set identity>`` when shared,
        ``<key>@content`` with a digest, a private one otherwise; keys are
        ``hotset:<namespace>:...``); None without one."""
        return None if self._session is None else self._session.namespace

    def evaluate_with(self, fn: Callable[[Any, Any, Any], Any] | None) -> None:
        """Give the forward pass a system that re-evaluates samples uses (ImPACT's set S).

        Before each epoch's draw the loader hands ``fn(x, y, ids)`` the samples the
        system names, in batches built as training batches are, and ``fn`` returns
        one loss per sample (e.g. ``criterion(model(x), y)`` with ``reduction="none"``
        under ``torch.no_grad()``). Their bytes come from the cache; a sample the
        cache does not hold is read from storage and counted (``evaluate_reads``).
        ``None`` stops it.
        """
        if fn is not None and not callable(fn):
            raise HotsetError(f"evaluate_with: fn must be callable or None, got {fn!r}")
        self._evaluator = fn

    def _evaluate(self, ids: np.ndarray) -> np.ndarray:
        """One loss per id from the user's forward pass over their cached bytes."""
        import torch

        assert self._evaluator is not None
        fetcher = self._fetcher
        keys = [fetcher.key_of(int(s)) for s in ids.tolist()]
        got = self.cache.get_many(keys) if self.cache is not None else [None] * len(keys)
        losses: list[np.ndarray] = []
        for start in range(0, len(ids), self.batch_size):
            part = ids[start : start + self.batch_size].tolist()
            blobs = []
            for j, sid in enumerate(part, start=start):
                blob = got[j]
                if blob is None:
                    blob = fetcher.reader.read_checked(sid)
                    self.evaluate_reads += 1
                blobs.append(blob)
            x = fetcher.collate(
                [fetcher.decode_one(b, s) for b, s in zip(blobs, part, strict=True)]
            )
            y = torch.from_numpy(fetcher.labels[part])
            out = self._evaluator(x, y, torch.as_tensor(part, dtype=torch.int64))
            values = out.detach().cpu().numpy() if isinstance(out, torch.Tensor) else out
            losses.append(np.asarray(values, dtype=np.float64).reshape(-1))
        return np.concatenate(losses) if losses else np.zeros(0, dtype=np.float64)

    def decisions(self) -> EpochLog:
        """Every decision of the current (or last) epoch, in planning order."""
        return self._planner.log

    def batch_seconds(self) -> list[float]:
        """Mini-batch times of the current (or last) epoch: seconds between yields.

        A batch's time holds the training step that came before it and the wait
        for its data, which is what a cache changes; the first also holds the
        workers' start. Quiver's probe compares the batches a system planned
        without the cache with the next ones (``quiver[probe=N]``;
        :func:`hotset.policies.quiver_placement.probe_result`).
        """
        return list(self._batch_seconds)

    def close(self) -> None:
        """Stop workers and release the cache (the embedded one is unlinked)."""
        self._stop_iteration()
        self._readahead.stop()
        self._prefetcher.stop()
        self._dataloader = None  # persistent workers shut down with their iterator
        self._packages.remove()  # this run's package files
        self._fetcher.close()
        if self.cache is not None:
            assert self._session is not None
            self._session.close()  # a private namespace is dropped, a shared one kept

    def __enter__(self) -> HotsetLoader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- epochs ---------------------------------------------------------------------
    def _begin_epoch(self, epoch: int) -> None:
        self._planner.evaluated = 0
        if self.system.capabilities.evaluates:
            if self._evaluator is not None:
                self._planner.evaluate(epoch, self._evaluate)
            elif len(self.system.policy.to_evaluate()) and not self._warned_evaluate:
                self._warned_evaluate = True
                warnings.warn(
                    f"system {self.system.name!r} re-evaluates some samples before each epoch, "
                    "but no evaluator was given: call loader.evaluate_with(fn), fn(x, y, ids) "
                    "returning one loss per sample from a forward pass; until then they keep "
                    "their historical losses",
                    stacklevel=3,
                )
        # after the evaluation: a resumed epoch restores its losses and draws the same order
        self._start_state = system_state(self.system)
        self._planner.begin(epoch, rank=self.rank, world_size=self.world_size)
        self._status = "running"
        self._yielded = 0
        self._batch_seconds = []
        self._updates = 0
        self._outstanding[:] = 0
        self._pending_val = None
        self._current = EpochStats(epoch)
        self._current.order = str(getattr(self.system.sampler, "last_mode", ""))
        self._epoch_set = False

    def _close_epoch(self) -> None:
        if self._updates == 0 and self._yielded and self.system.capabilities.learns:
            # Without this the system fails later, on its own terms (a NaN training loss).
            raise HotsetError(
                f"system {self.system.name!r} learns from per-sample losses, but epoch "
                f"{self._planner.epoch} got none: after each step call "
                "loader.update(ids, loss) with loss = criterion(output, y) computed with "
                "reduction='none' (one loss per sample); or pick a system that does not learn "
                "(lru, minio, pytorch)"
            )
        self._finish_epoch()
        if self._current is not None:
            self._current.coverage = self._coverage.close_epoch()
            self._history.append(self._current)
            self._current = None
        self._status = "idle"
        if not self._epoch_set:
            self._next_epoch = self._planner.epoch + 1

    def _finish_epoch(self) -> None:
        """Close the epoch in the system; under DDP with a learning system every rank's
        feedback is shared first (:mod:`hotset.torch.ranks`)."""
        planner = self._planner
        start = self._start_state
        share = None
        if self.system.capabilities.learns and start is not None and active_world(self.world_size):

            def share(log: list[Feedback], val: float | None) -> tuple[float, float | None]:
                return merge_epoch(
                    self.system,
                    log,
                    start_table=start["table"],
                    epoch=planner.epoch,
                    val_accuracy=val,
                )

        planner.finish(val_accuracy=self._pending_val, share=share)

    def _stop_iteration(self) -> None:
        gen, self._gen = self._gen, None
        if gen is not None:
            # Abandon first: a worker waiting for a batch that will never be written
            # then stops at once, instead of holding up the DataLoader's shutdown.
            self._abandon_unwritten(clear=False)
            with contextlib.suppress(Exception):
                gen.close()  # type: ignore[attr-defined]

    def _abandon_unwritten(self, *, clear: bool) -> None:
        """Plans made but never executed will not be: stop them and repair the cache."""
        seq = self._sequencer
        planner = self._planner
        if not clear and seq.written_upto >= planner.seq:
            planner.confirm(seq.written_upto)
            return
        with seq.abandoning() as written:
            planner.generation = seq.generation
            if self.cache is not None:
                if clear:
                    self._forget_cache_contents()
                else:
                    dead = [d for s, d in planner.unconfirmed.items() if s > written]
                    if dead:
                        ids = np.unique(np.concatenate(dead)).tolist()
                        try:
                            self.cache.delete_many([self._fetcher.key_of(i) for i in ids])
                        except BACKEND_ERRORS:
                            # unreachable now: a put later refused over budget clears it
                            self._fetcher.note_leftovers()
            seq.set_written(planner.seq)
        planner.unconfirmed.clear()

    def _forget_cache_contents(self) -> None:
        """After a resume: the cache may hold what the restored policy does not.

        A private namespace is cleared. A shared one is left alone (other jobs read
        it): entries the policy does not know only take shared budget, and a put
        they crowd out is skipped and counted. A cache that cannot be reached now is
        not cleared either; the fetcher is told that the cache may hold leftovers,
        so a put refused over budget later clears it instead of failing.
        """
        assert self.cache is not None and self._session is not None
        if self._session.shared:
            return
        try:
            self.cache.clear()
        except BACKEND_ERRORS:
            self._fetcher.note_leftovers()

    def _note_skipped(self, errors: Mapping[int, str]) -> None:
        """Keep the errors of skipped samples; warn on the first skip of an epoch."""
        first = self._current is not None and self._current.counts["skipped"] == len(errors)
        self._skipped.update(errors)
        if first:
            sid, why = next(iter(errors.items()))
            warnings.warn(
                f"hotset: skipping samples whose reads failed (on_error='skip'), "
                f"first id {sid}: {why}; loader.skipped() lists them, "
                "report()'s 'skipped' counts them",
                RuntimeWarning,
                stacklevel=3,
            )

    def skipped(self) -> dict[int, str]:
        """Every sample skipped so far (``on_error="skip"``): id -> why its read failed."""
        return dict(self._skipped)

    def _run(self) -> Iterator[tuple[Any, Any, Any, Any]]:
        stats = self._current
        assert stats is not None and self._dataloader is not None
        # Before iter(): with workers it already plans (and prefetches) the first batches.
        stats.baseline(self._readahead.counts, self._prefetcher.counts)
        self._worker_init.from_main_thread = threading.current_thread() is threading.main_thread()
        self._packages.restart()  # plans are handed out afresh from here, in order
        it = iter(self._dataloader)
        # Only now: workers are forked by iter(), and no read-ahead thread may run then.
        planner = self._planner
        self._readahead.start(
            planner.order,
            begin=planner.planned * self.batch_size,
            skip=self.system.policy.resident(),
        )
        bar = None
        if self.progress:
            import sys

            from tqdm import tqdm

            bar = tqdm(
                total=self._planner.n_batches,
                initial=self._yielded,
                desc=f"{self.system.name} epoch {self._planner.epoch}",
                unit="batch",
                file=sys.stderr,
            )
        wall_start = time.perf_counter() - stats.wall_seconds
        last_yield = time.perf_counter()
        try:
            while True:
                t0 = time.perf_counter()
                try:
                    batch = next(it)
                except StopIteration:
                    break
                except RuntimeError as exc:
                    if not _WORKER_DIED.search(str(exc)):
                        raise
                    # The worker may have died holding the cache-write turn: abandon
                    # now, so the others stop at once rather than at their timeout.
                    self._abandon_unwritten(clear=False)
                    raise HotsetError(
                        f"{exc}: a DataLoader worker died (killed, or by the out-of-memory "
                        "killer); the epoch's unwritten batches were abandoned and the "
                        "loader can be closed, resumed from a state_dict or iterated again"
                    ) from exc
                stall = time.perf_counter() - t0
                if isinstance(batch, HotsetError):
                    # returned by the fetcher, not raised (see hotset.torch.fetch): the
                    # user sees the error itself, not torch's wrapper around its traceback
                    raise batch
                x, y, ids, w, info = batch
                self._packages.consumed()  # its packages were read: the files can go
                stats.add(info, stall)
                if info["skipped"]:
                    self._note_skipped(info["skipped_errors"])
                stats.absorb(self._readahead.counts, self._prefetcher.counts)
                served = ids.numpy()
                np.add.at(self._outstanding, served, 1)
                self._coverage.add(served)
                self._yielded += 1
                self._planner.confirm(self._sequencer.written_upto)
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix(hit=f"{stats.row()['exact_hit_ratio']:.3f}")
                stats.wall_seconds = time.perf_counter() - wall_start
                if len(served) == 0:
                    continue  # on_error="skip" left nothing of it: no empty batch to train on
                now = time.perf_counter()
                self._batch_seconds.append(now - last_yield)
                last_yield = now
                yield x, y, ids, w
            stats.wall_seconds = time.perf_counter() - wall_start
            stats.finished = True
            self._status = "finished"
        finally:
            self._readahead.stop()
            self._prefetcher.stop()
            stats.absorb(self._readahead.counts, self._prefetcher.counts)
            if bar is not None:
                bar.close()
            del it  # non-persistent workers shut down here

    # -- checkpoints ------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume exactly: at epoch boundaries and mid-epoch."""
        running = self._status in ("running", "finished")
        return {
            **self._identity(),
            "lag": self.lag,
            "status": self._status,
            "epoch": self._planner.epoch,
            "next_epoch": self._next_epoch,
            "epoch_set": self._epoch_set,
            "yielded": self._yielded,
            "updates": self._updates,
            "system_state": self._start_state if running else system_state(self.system),
            "feedback": self._planner.feedback_state() if running else None,
            "outstanding": self._outstanding.copy() if running else None,
            "pending_val": self._pending_val,
            "history": [s.state() for s in self._history],
            "coverage": self._coverage.state_dict(),
            "current": self._current.state() if self._current is not None else None,
        }

    def _identity(self) -> dict[str, Any]:
        """What a state must share with this loader to resume in it, the budget this
        rank's policy plans in included (a resumed policy must fit it)."""
        cap = self.system.policy.budget.capacity_bytes
        return {
            "version": STATE_VERSION,
            "system": self.system.name,
            "n": len(self._outstanding),
            "batch_size": self.batch_size,
            "seed": self.seed,
            "rank": self.rank,
            "world_size": self.world_size,
            "cache_bytes": None if cap is None else int(cap),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume from :meth:`state_dict`; the next ``iter`` continues where it stopped.

        The cache is cleared: ids the restored policy holds are read from storage
        again the first time they are served (counted as ``rebuild_reads``). A
        state that cannot be restored is a :class:`HotsetError` naming what is
        wrong, and leaves the loader as it was (:mod:`hotset.torch.state`).
        """
        check_loader_state(state, self._identity())
        try:
            before: dict[str, Any] | None = self.state_dict()
        except HotsetError:
            before = None  # a system that cannot checkpoint has nothing to roll back to
        try:
            self._restore(state)
        except Exception as exc:
            if before is not None:
                with contextlib.suppress(Exception):
                    self._restore(before)
            if isinstance(exc, HotsetError):
                raise
            raise HotsetError(
                f"loader state: malformed ({type(exc).__name__}: {exc}); the loader is "
                "left as it was"
            ) from exc

    def _restore(self, state: Mapping[str, Any]) -> None:
        self._stop_iteration()
        load_system_state(self.system, state["system_state"])
        self._history = [EpochStats.from_state(s) for s in state["history"]]
        self._coverage.load_state_dict(state["coverage"])
        self._current = None
        self._next_epoch = int(state["next_epoch"])
        self._epoch_set = bool(state["epoch_set"])
        self._pending_val = state["pending_val"]
        status = state["status"]
        if status == "idle":
            self._status = "idle"
            self._planner.epoch = int(state["epoch"])
            self._start_state = None
        else:
            epoch = int(state["epoch"])
            self._begin_epoch(epoch)
            self._epoch_set = bool(state["epoch_set"])
            self._pending_val = state["pending_val"]
            fb = state["feedback"]
            feedback = [
                Feedback(int(t), np.asarray(i, dtype=np.int64), np.asarray(v, dtype=np.float64))
                for t, i, v in zip(fb["tags"], fb["ids"], fb["losses"], strict=True)
            ]
            yielded = int(state["yielded"])
            if yielded > self._planner.n_batches:
                raise HotsetError(
                    f"loader state: yielded={yielded} batches, but epoch {epoch} has "
                    f"{self._planner.n_batches}"
                )
            self._planner.replay(yielded, feedback, [int(a) for a in fb["applied_at"]])
            self._yielded = yielded
            self._updates = int(state.get("updates", len(fb["tags"])))
            self._outstanding[:] = np.asarray(state["outstanding"], dtype=np.int32)
            if state["current"] is not None:
                self._current = EpochStats.from_state(state["current"])
            self._status = status
            self._resumed = True
        self._abandon_unwritten(clear=True)


def as_hotset_dataset(data: Any, *, progress: bool = False) -> HotsetDataset:
    """``data`` as a :class:`HotsetDataset`: opened from a location, or a user's map-style
    Dataset wrapped (:func:`hotset.torch.user.from_dataset`, its items cached in
    :mod:`hotset.data.itemcodec`'s safe encoding, never pickled)."""
    from hotset.torch.user import from_dataset

    if isinstance(data, HotsetDataset):
        return data
    if isinstance(data, str | os.PathLike):
        return open_dataset(data)
    return from_dataset(data, progress=progress)


def loader(
    data: HotsetDataset | str | Any,
    *,
    system: str = "lru",
    cache: str | int | float | list[str] | None = None,
    batch_size: int = 64,
    **options: Any,
) -> HotsetLoader:
    """Build a :class:`HotsetLoader` over ``data``.

    ``data`` is a :class:`HotsetDataset` (:func:`open_dataset`), a location
    (opened with ``decode="image"``), or the user's own map-style ``Dataset``:
    its items, as ``__getitem__`` returns them, are cached in a safe encoding
    of tensors, arrays, numbers and strings, never pickled (see
    :mod:`hotset.torch.user`; :func:`hotset.from_dataset` caches raw bytes
    instead, which holds more samples). ``loader.dataset`` is what was given.

    ``cache`` is a budget for the embedded shared-memory cache (``"2gb"``,
    ``2_000_000``, ``"20%"`` or a float fraction of the dataset's bytes such as
    ``0.2``; left out, 20% of the data set), or a backend (``"redis://host:port/db"``, ``"redis+cluster://h:p,h:p"``,
    ``"memory"``) with the budget in ``cache_bytes=``. Other options: see
    :class:`HotsetLoader` (``num_workers``, ``seed``, ``pin_memory``,
    ``persistent_workers``, ``prefetch_factor``, ``io_threads``,
    ``readahead_bytes``, ``verify``, ``package_dir`` (where iCACHE/ImPACT write
    their packages, a local directory created if missing; the data store by
    default, which must then be writable), ``system_options``, ``progress``,
    ``check_store``, ``rank``/``world_size``, ``collate_fn``: from the list of
    decoded samples to a batch's ``x``).

    ``verify`` (on by default) checks every sample against the manifest's xxh3
    before it reaches training: a file read from storage that does not match is
    an :class:`~hotset.errors.IntegrityError` naming its key and id; a cache entry
    that does not match (another client wrote other bytes under its key) is
    dropped and read from storage instead, counted as ``integrity_errors`` in
    :meth:`HotsetLoader.report`. It costs one xxh3 per sample, about 0.1 us on
    small files and 1.7 us on a 100 kB one (see :mod:`hotset.torch.reads`);
    ``verify=False`` opts out.

    ``on_error`` says what a sample whose read fails for good does (a
    :class:`~hotset.errors.StorageError` once the store's retries are spent, or an
    :class:`~hotset.errors.IntegrityError`): ``"raise"`` (the default) stops
    training with that error; ``"skip"`` leaves the sample out of its batch,
    counts it (``skipped`` in :meth:`HotsetLoader.report`), keeps its error
    (:meth:`HotsetLoader.skipped`) and warns once per epoch. A skipped sample is
    not trained that epoch (``never_trained`` shows it) and is tried again the next.

    ``namespace`` (Redis caches) is a sharing key: jobs that give the same key
    and read the same data set (by content) share one Redis namespace,
    ``<key>@<data set identity>``, and its one budget ``cache_bytes``. Joining
    never clears it and closing keeps it for the next job; puts refused because
    other jobs filled the budget are skipped and counted (``refused_puts``).
    With the embedded cache, which has nothing to share, a namespace is an error.
    Without it the loader uses a private namespace, dropped when it closes.
    Either way the job holds a lease on its namespace, renewed every
    ``lease_ttl_s / 3`` seconds (default 60 s); a killed job's private
    namespace is collected by the next loader on the server once its lease has
    lapsed, or by ``hotset cache gc --redis URL`` (:mod:`hotset.cachestore.session`).

    ``digest`` (a Redis cache; a path written by ``hotset data digest`` or a
    :class:`~hotset.data.digest.Digest`) keys the cache by the BLAKE2b of each
    sample's bytes (:mod:`hotset.cachestore.capability`): a shared namespace is
    then ``<key>@content`` whatever the data set, jobs on copies of the same
    content share entries, and a job reaches only content its digest holds. A
    digest made from other bytes is a :class:`~hotset.errors.HotsetError`.
    """
    return HotsetLoader(data, system=system, cache=cache, batch_size=batch_size, **options)
