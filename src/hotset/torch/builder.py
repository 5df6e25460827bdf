"""Assemble a loader's parts from its :class:`~hotset.torch.options.LoaderOptions`.

A loader is a handful of parts, each with one job, built here in a fixed order
(every check that can fail runs before the cache is opened, so a bad option
leaves nothing behind on a server):

* the **data set adapter**: a :class:`~hotset.torch.dataset.HotsetDataset`,
  opened from a location or wrapped around a user's map-style Dataset;
* the **System** (order and cache policy), planning in this rank's share of the
  cache budget, and its **packing** step for systems that build packages;
* the **cache session** (:mod:`hotset.cachestore.session`): the namespace, its
  lease and the store; under torch.distributed the embedded cache is one per
  node, which the local ranks agree on first (:mod:`hotset.torch.nodecache`);
* the **engine driver** (:class:`~hotset.engine.planner.Planner`) and the
  **write sequencer** the workers take turns on;
* the **fetcher** the DataLoader's workers run (:mod:`hotset.torch.fetch`), the
  main process's **read-ahead** and **unit prefetcher**;
* the **DataLoader** itself, with a sampler that hands out plans.

:func:`build` returns them as :class:`LoaderParts`; the
:class:`~hotset.torch.loader.HotsetLoader` only iterates, reports and
checkpoints over them.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from torch.utils.data import DataLoader

from hotset.cachestore.base import CacheStore
from hotset.cachestore.redaction import redact_spec_value
from hotset.cachestore.session import CacheSession, check_share_backend
from hotset.cachestore.shm_node import NodeShare
from hotset.coordination.links import Coordination, Where, connect, evicting_in_concert
from hotset.data.digest import Digest, digest_for_job
from hotset.data.package_writer import PackageWriter
from hotset.engine.budget import Budget
from hotset.engine.capabilities import Capabilities
from hotset.engine.packages import PackageFiles
from hotset.engine.planner import Planner
from hotset.engine.units import UnitLayout
from hotset.errors import HotsetError
from hotset.storage.local import LocalStore
from hotset.systems.auto import AUTO, Choice, choose
from hotset.systems.base import System
from hotset.torch.batches import check_batch_system
from hotset.torch.checks import check_budget, check_manifest_matches_store
from hotset.torch.chunkpack import with_chunks
from hotset.torch.dataset import HotsetDataset, open_dataset
from hotset.torch.devicepath import VisionPath, vision_path
from hotset.torch.fetch import BatchAssembly, BatchFetcher, FetchIO, identity_collate
from hotset.torch.forksafe import (
    keeps_workers,
    start_forkserver,
    start_method_name,
    worker_start_method,
)
from hotset.torch.nodecache import node_share
from hotset.torch.options import DEFAULT_CACHE, DEFAULT_READAHEAD_BYTES, LoaderOptions
from hotset.torch.packing import PackingThread
from hotset.torch.plansampler import PlanSampler
from hotset.torch.prefetch import UnitPrefetcher
from hotset.torch.readahead import ReadAhead
from hotset.torch.sequencer import Sequencer
from hotset.torch.user import is_unhashed, unhashed_verify_error
from hotset.torch.workers import WorkerInit
from hotset.torch.workerseed import Reseed
from hotset.units import parse_budget
from hotset.warnonce import call_once_warned, warn_once

__all__ = ["LoaderParts", "as_hotset_dataset", "build", "resolve_auto", "resolve_cache"]

#: cache specs that name the embedded shared-memory cache
_EMBEDDED = ("memory", "shm")
#: the start method a DataLoader is given (a name, a context, or None: its default)
Context = Any


@dataclass
class LoaderParts:
    """What :func:`build` assembled: everything a loader iterates over."""

    #: the data set as a HotsetDataset (opened or wrapped from what the user gave)
    data: HotsetDataset
    #: the options the parts were built with: ``system="auto"`` resolved to a system
    options: LoaderOptions
    #: what ``system="auto"`` picked and why; None when the user named the system
    choice: Choice | None
    system: System
    rank: int
    world_size: int
    #: how DataLoader starts workers: None is its default (fork on Linux); see
    #: hotset.torch.forksafe for when the loader chooses "forkserver" itself
    multiprocessing_context: Context
    #: the cache's budget (all ranks of a shared namespace, or of a node's embedded
    #: cache, together); 0 without a cache
    capacity_bytes: int
    #: the cache's namespace and lease; None without a cache
    session: CacheSession | None
    cache: CacheStore | None
    #: the packing step (a policy that builds packages), run in the main process
    packer: PackageWriter | None
    sequencer: Sequencer
    planner: Planner
    fetcher: BatchFetcher
    #: what augment= makes of each batch's x in the training process; None without it
    vision: VisionPath | None
    readahead: ReadAhead
    prefetcher: UnitPrefetcher
    packages: PackingThread
    worker_init: WorkerInit
    #: the DataLoader's sampler: hands out the plans (hotset.torch.plansampler)
    sampler: PlanSampler
    #: None once the loader is closed (its persistent workers shut down with it)
    dataloader: DataLoader[Any] | None
    #: a DataLoader like ``dataloader``, with no workers started yet: the loader
    #: replaces one whose kept (persistent) workers an error left in doubt
    new_dataloader: Callable[[], DataLoader[Any]]
    #: the links to the other jobs on a shared namespace that the policy's roles ask for
    coordination: Coordination = field(default_factory=Coordination)


@dataclass
class _Plan:
    """The decision side: the System and the budgets it plans in."""

    system: System
    caps: Capabilities
    #: the cache backend's spec and its whole capacity in bytes
    spec: str | list[str]
    capacity: int
    #: what this rank's policy plans in (a share of ``capacity``, see _planned_budget)
    planned: int


def build(given: Any, options: LoaderOptions) -> LoaderParts:
    """Every part of a loader over ``given`` (a data set, a location or a user's Dataset)."""
    data = _adapt(given, options)
    options, choice = resolve_auto(data, options)
    # a chunk system's layout: the data set's own, or the loader's pack of it
    data = with_chunks(data, options, stacklevel=4)
    vision = vision_path(data, options)  # refuses a transform beside augment=, before any I/O
    rank, world_size = options.ranks()
    context, start_why = worker_start_method(
        options.multiprocessing_context, num_workers=options.num_workers
    )
    if start_why is not None:
        # the frame of whoever called hotset.loader (build <- HotsetLoader <- loader)
        warn_once(f"hotset: {start_why}", RuntimeWarning, stacklevel=4)
    sizes = np.asarray(data.manifest.sizes, dtype=np.int64)
    node = _node(options, sizes, world_size)  # a collective under a process group
    plan = _plan_side(data, options, sizes, world_size, 1 if node is None else node.local_world)
    packer, unit_layout = _packing(plan, data, options, sizes)
    readahead_bytes = _readahead_budget(plan.caps, options, node_shared=node is not None)
    _check_drivable(plan.caps, options, world_size)
    check_batch_system(options.batch, plan.system)
    if plan.caps.caches:
        check_budget(
            plan.planned, sizes, options.batch_size, shares=node.local_world if node else 1
        )
    job_digest = _job_digest(plan.caps, data, options)
    check_manifest_matches_store(
        data.manifest, data.store, mode=options.check_store, seed=options.seed
    )
    session, cache = (None, None)
    if plan.caps.caches:
        session, cache = _open_cache(plan, data, options, rank, job_digest, node)
    sequencer = Sequencer(context=context)
    planner = Planner(
        plan.system,
        n=len(data.manifest),
        batch_size=options.batch_size,
        lag=options.lag,
        drop_last=options.drop_last,
        sizes=sizes,
    )
    fetcher = _fetcher(data, options, sizes, cache, sequencer, unit_layout, session, vision)
    readahead = ReadAhead(
        fetcher.reader.read_checked,
        sizes,
        budget_bytes=readahead_bytes,
        threads=options.io_threads,
    )
    prefetcher = UnitPrefetcher(fetcher.reader.read_unit, threads=options.io_threads)
    packages = PackingThread(plan.system, packer)
    coordination = _coordination(plan, session, data, options, rank, world_size)
    sampler = PlanSampler(planner, readahead, prefetcher, packages, cycle=coordination.cycle)
    worker_init, new_dataloader = _workers(fetcher, sampler, options, context)
    return LoaderParts(
        data=data,
        options=options,
        choice=choice,
        system=plan.system,
        rank=rank,
        world_size=world_size,
        multiprocessing_context=context,
        capacity_bytes=plan.capacity if plan.caps.caches else 0,
        session=session,
        cache=cache,
        packer=packer,
        sequencer=sequencer,
        planner=planner,
        fetcher=fetcher,
        vision=fetcher.vision,
        readahead=readahead,
        prefetcher=prefetcher,
        packages=packages,
        worker_init=worker_init,
        sampler=sampler,
        dataloader=new_dataloader(),
        new_dataloader=new_dataloader,
        coordination=coordination,
    )


def resolve_auto(
    data: HotsetDataset, options: LoaderOptions
) -> tuple[LoaderOptions, Choice | None]:
    """``options`` with ``system="auto"`` replaced by the system it picks for ``data``."""
    if options.system != AUTO:
        return options, None
    if options.system_options:
        raise HotsetError(
            "system_options without a system: auto picks the system, so name it to give it "
            f"options, got {dict(options.system_options)!r}"
        )
    choice = choose(packed=data.layout is not None)
    return dataclasses.replace(options, system=choice.system), choice


# -- the data set -------------------------------------------------------------------
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


def _adapt(given: Any, options: LoaderOptions) -> HotsetDataset:
    """The data set, refusing ``verify`` where there are no hashes to verify against."""
    data = given
    if not isinstance(data, HotsetDataset):
        try:
            data = as_hotset_dataset(data, progress=options.progress)
        except HotsetError as exc:
            raise HotsetError(
                "data must be a HotsetDataset (hotset.open_dataset(...)), a data set "
                f"location, or a map-style Dataset: {exc}"
            ) from None
    if options.verify and is_unhashed(data.manifest):
        # from_dataset(sizes=...) hashed nothing: checks happen only if the user opts out
        raise unhashed_verify_error(data.source)
    return data


# -- the System and its budget ------------------------------------------------------
def resolve_cache(
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
            raise HotsetError(f"cache {redact_spec_value(cache)} needs cache_bytes= (its budget)")
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


def _plan_side(
    data: HotsetDataset,
    options: LoaderOptions,
    sizes: npt.NDArray[np.int64],
    world_size: int,
    local_world: int = 1,
) -> _Plan:
    """The cache's spec and budget, and the System built to plan in this rank's share."""
    from hotset.systems.registry import build_system

    total = int(sizes.sum())
    spec, capacity = resolve_cache(options.cache, options.cache_bytes, total)
    check_share_backend(options.namespace, spec)  # namespace= means Redis: never ignored
    planned = _planned_budget(options, capacity, total, world_size, local_world)
    system = build_system(
        options.system,
        n=len(data.manifest),
        budget=Budget(capacity_bytes=planned, sizes=sizes),
        seed=options.seed,
        batch_size=options.batch_size,
        layout=data.layout,
        **dict(options.system_options or {}),
    )
    return _Plan(system, system.capabilities, spec, capacity, planned)


def _planned_budget(
    options: LoaderOptions, capacity: int, total: int, world_size: int, local_world: int = 1
) -> int:
    """The bytes this rank's policy plans in.

    A job's ranks on one shared namespace hold one pool of ``capacity``: each
    rank's policy plans its share, so the ranks never crowd each other out, and
    a rank's planned miss is looked up in the pool (what the other ranks put).
    The ``local_world`` ranks on one node's embedded cache split it alike.
    """
    from hotset.systems.registry import capabilities_of

    namespace = options.namespace
    pooled_ranks = namespace is not None and world_size > 1
    planned = capacity // world_size if pooled_ranks else capacity // local_world
    fits_whole = planned >= total
    if (
        namespace is not None
        and not fits_whole
        and capabilities_of(options.system).evicts_in_concert
    ):
        # Jobs cycling through chunks in concert each plan two chunks of a third: a
        # chunk one job still holds while another loads its next fits beside them.
        planned = planned * 2 // 3
    return planned


def _node(
    options: LoaderOptions, sizes: npt.NDArray[np.int64], world_size: int
) -> NodeShare | None:
    """The local ranks sharing this node's embedded cache (:mod:`hotset.torch.nodecache`);
    None where this rank's cache is its own or not embedded. Decided from the options
    alone, so every rank of the job agrees on whether to meet (a system that caches
    nothing meets all the same, and opens no cache)."""
    if options.cache_scope != "node" or world_size < 2:
        return None
    spec, _ = resolve_cache(options.cache, options.cache_bytes, int(sizes.sum()))
    if not (isinstance(spec, str) and spec.strip().lower() in _EMBEDDED):
        return None
    return node_share(options.cache_scope, world_size)


def _check_drivable(caps: Capabilities, options: LoaderOptions, world_size: int) -> None:
    """Refuse a system that cannot drive this loader's real cache."""
    system = options.system
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
    if caps.plans_world and world_size > 1 and options.namespace is None:
        raise HotsetError(
            f"system {system!r} across {world_size} ranks keeps one memory for the whole "
            "job: give every rank the same shared cache, e.g. cache='redis://host:6379/0', "
            "cache_bytes='20%', namespace='my-job'"
        )


def _readahead_budget(
    caps: Capabilities, options: LoaderOptions, *, node_shared: bool = False
) -> int:
    """Read-ahead's staging bytes: as given, else 64 MiB where guessing the reads works.

    A policy that may serve another id in place of a miss, or reads whole units,
    makes "not cached now" a poor guess of what will be read alone; so does a
    shared namespace, where other jobs may hold this job's misses, and a node's
    embedded cache, where the other ranks may.
    """
    if options.readahead_bytes is not None:
        return int(options.readahead_bytes)
    shared = options.namespace is not None or node_shared
    guess_fails = caps.substitutes or caps.reads_units or caps.packs or shared
    return 0 if guess_fails else DEFAULT_READAHEAD_BYTES


# -- packages, digests and the cache -----------------------------------------------
def _package_store(options: LoaderOptions, *, packs: bool) -> LocalStore | None:
    """The local directory packages go to (``package_dir``); None: into the data store."""
    package_dir = options.package_dir
    if package_dir is None:
        return None
    if not packs:
        raise HotsetError(
            f"package_dir={str(package_dir)!r}: system {options.system!r} builds no packages "
            "(only iCACHE and ImPACT systems write them)"
        )
    try:
        return LocalStore(package_dir, create=True)
    except HotsetError as exc:  # cannot be made (a read-only or full parent, a file there)
        raise HotsetError(f"package_dir={str(package_dir)!r}: {exc}") from None


def _packing(
    plan: _Plan, data: HotsetDataset, options: LoaderOptions, sizes: npt.NDArray[np.int64]
) -> tuple[PackageWriter | None, UnitLayout | None]:
    """The packing step (a policy that builds packages) and the layout workers read by.

    Packages are written in this process ahead of the workers: they read a package
    file as one request, by its key alone.
    """
    package_store = _package_store(options, packs=plan.caps.packs)
    if not plan.caps.packs:
        return None, data.layout
    manifest = data.manifest
    packer = PackageWriter.for_policy(
        plan.system.policy,
        data.store,
        keys=manifest.keys,
        # verify=False (a data set from sizes= has no hashes to check by): sizes only
        hashes=manifest.hashes if options.verify else None,
        sizes=sizes,
        label="loader",
        out=package_store,
    )
    return packer, PackageFiles(len(manifest), prefix=packer.prefix, store=package_store)


def _job_digest(caps: Capabilities, data: HotsetDataset, options: LoaderOptions) -> Digest | None:
    """The digest that keys the cache by content (:mod:`hotset.cachestore.capability`)."""
    if options.digest is None:
        return None
    if caps.packs:
        raise HotsetError(
            f"digest with system {options.system!r}: its packages are built at run time, so "
            "no digest holds their capabilities; use a system that reads samples or chunks"
        )
    return digest_for_job(
        options.digest,
        data.manifest,
        unit_hashes=() if data.layout is None else data.layout.chunk_hashes,
        reads_units=caps.reads_units,
    )


def _open_cache(
    plan: _Plan,
    data: HotsetDataset,
    options: LoaderOptions,
    rank: int,
    job_digest: Digest | None,
    node: NodeShare | None = None,
) -> tuple[CacheSession, CacheStore]:
    """The cache session and the store the fetcher uses.

    A private namespace is new and empty, as the fresh policy is; a shared one is
    joined as it is (other jobs may be reading it).
    """
    manifest = data.manifest
    session = CacheSession.open(
        plan.spec,
        capacity_bytes=plan.capacity,
        # one slot per sample, then one per read unit (cached whole under id n + u)
        n_slots=len(manifest) + (0 if data.layout is None else data.layout.n_chunks),
        dataset_id=manifest.identity(),
        share=options.namespace,
        rank=rank,
        lease_ttl_s=options.lease_ttl_s,
        digest=job_digest,
        node=node,
        # The fetcher re-hashes what the cache serves itself (with ``verify``), so
        # that a poisoned entry is dropped and re-read instead of failing the
        # batch; the store's own check would only raise, and hash puts again.
        verify=False,
    )
    # a content-addressed namespace holds several data sets: each its own chunks
    scope = "" if job_digest is None else manifest.identity()
    cache = evicting_in_concert(
        session.cache, plan.system.policy, shared=session.shared, scope=scope
    )
    return session, cache


def _coordination(
    plan: _Plan,
    session: CacheSession | None,
    data: HotsetDataset,
    options: LoaderOptions,
    rank: int,
    world_size: int,
) -> Coordination:
    """The links the policy's roles ask for (:func:`hotset.coordination.links.connect`)."""
    where = Where(
        cache=None if session is None else session.cache,
        shared=session is not None and session.shared,
        dataset=data.manifest.identity(),
        rank=rank,
        world_size=world_size,
        batch_size=options.batch_size,
        budget_bytes=plan.capacity if plan.caps.caches else 0,
    )
    system = plan.system
    return connect(system.policy, system.table, joins_cycle=plan.caps.joins_cycle, where=where)


# -- the worker side ----------------------------------------------------------------
def _fetcher(
    data: HotsetDataset,
    options: LoaderOptions,
    sizes: npt.NDArray[np.int64],
    cache: CacheStore | None,
    sequencer: Sequencer,
    layout: UnitLayout | None,
    session: CacheSession | None,
    vision: VisionPath | None = None,
) -> BatchFetcher:
    """The DataLoader's dataset: executes plans in the workers (lean: no loader in it)."""
    manifest = data.manifest
    return BatchFetcher(
        keys=manifest.keys,
        hashes=manifest.hashes,
        sizes=sizes,
        labels=np.asarray(manifest.labels, dtype=np.int64),
        store=data.store,
        cache=cache,
        sequencer=sequencer,
        io=FetchIO(
            io_threads=options.io_threads,
            verify=options.verify,
            skip_errors=options.on_error == "skip",
            shared=session is not None and session.pooled,
        ),
        assembly=BatchAssembly(
            decode=data.decode,
            transform=data.transform,
            collate_fn=options.collate_fn,
            collate_inputs=options.collate_inputs,
            vision=vision,
        ),
        layout=layout,
    )


def _workers(
    fetcher: BatchFetcher, sampler: PlanSampler, options: LoaderOptions, context: Context
) -> tuple[WorkerInit, Callable[[], DataLoader[Any]]]:
    """How workers start and live: their init, and what makes a DataLoader with them.

    Workers the loader keeps by its own choice are reseeded each epoch
    (:mod:`hotset.torch.workerseed`); a fork server is started now, the last step
    of a build, so that a build that fails starts nothing.
    """
    persistent = keeps_workers(options.persistent_workers, context, num_workers=options.num_workers)
    if persistent and options.persistent_workers is None:
        fetcher.reseed = Reseed(options.worker_init_fn)
    #: workers die with the main process (see hotset.torch.workers), then the user's init
    worker_init = WorkerInit(
        options.worker_init_fn, forkserver=start_method_name(context) == "forkserver"
    )

    def new_dataloader() -> DataLoader[Any]:
        return _dataloader(fetcher, sampler, options, context, worker_init, persistent)

    if options.num_workers:
        start_forkserver(context)
    return worker_init, new_dataloader


def _dataloader(
    fetcher: BatchFetcher,
    sampler: PlanSampler,
    options: LoaderOptions,
    context: Context,
    worker_init: WorkerInit,
    persistent: bool,
) -> DataLoader[Any]:
    """A stock DataLoader whose items are whole plans (automatic batching off).

    ``persistent`` is ``persistent_workers`` as given, else decided by the start
    method (:func:`hotset.torch.forksafe.keeps_workers`). Built under
    :func:`~hotset.warnonce.call_once_warned`: torch warns of more workers than cores
    on every DataLoader made, as on every iter().
    """
    return call_once_warned(
        lambda: DataLoader(
            fetcher,
            batch_size=None,
            sampler=sampler,
            num_workers=options.num_workers,
            collate_fn=identity_collate,
            pin_memory=options.pin_memory,
            persistent_workers=persistent,
            prefetch_factor=options.prefetch_factor,
            timeout=options.timeout,
            multiprocessing_context=context,
            worker_init_fn=worker_init,
        )
    )
